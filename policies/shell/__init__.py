"""The shell policy: the ``[shell]`` config section and the check of each command string.

- :mod:`._config` -- the ``[shell]`` section: mode, workspace, allowlist, syntax, limits;
- :mod:`._names` -- the default allowlist and the programs that can never be allowed;
- :mod:`._env` -- environment variables a command may not set;
- :mod:`._words` -- words, simple commands and redirects, decoded under bash's quoting rules;
- :mod:`._parse` -- a command string to its simple commands, via tree-sitter-bash;
- :mod:`._compound` -- loops, conditionals, ``case`` and the test commands, for the parse;
- :mod:`._parts` -- words, assignments and redirections, for the parse;
- :mod:`._rules` -- what the per-program argument rules share;
- :mod:`._programs`, :mod:`._git`, :mod:`._runners`, :mod:`._sed` -- the rules themselves;
- :mod:`._policy` -- :class:`ShellPolicy`, which puts them together.

:mod:`toolcage.policies` exports these names too; they report it as their module.
"""

from .._public import publish
from ._config import ShellConfig, ShellLimits, ShellMode, ShellSyntax
from ._env import protected_env_reason
from ._policy import ShellPolicy, ShellVerdict
from ._words import ShellPolicyViolation

__all__ = [
    "ShellConfig",
    "ShellLimits",
    "ShellMode",
    "ShellPolicy",
    "ShellPolicyViolation",
    "ShellSyntax",
    "ShellVerdict",
    "protected_env_reason",
]

publish(globals(), __all__)
del publish
