"""Operator policy: the TOML config and the decisions made from it.

Policies decide -- data in, verdict out -- and import nothing of the rest of toolcage.
"""

from ._addresses import blocked_reason
from ._config import (
    ApprovalConfig,
    ConfigError,
    LimitsConfig,
    LoopLimits,
    OutputStoreConfig,
    ToolcageConfig,
    ToolOverride,
    load_config,
)
from ._egress import (
    EgressConfig,
    EgressPolicy,
    EgressRules,
    EgressViolation,
    WebSearchConfig,
)
from ._mounts import GrantedMount, MountArea, MountError, MountPolicy, MountsConfig
from ._paths import PathPolicyViolation, canonical_guest_path
from ._public import publish
from ._shell_config import ShellConfig, ShellLimits, ShellMode, ShellSyntax
from ._shell_env import protected_env_reason
from ._shell_policy import ShellPolicy, ShellVerdict
from ._shell_words import ShellPolicyViolation

__all__ = [
    "ApprovalConfig",
    "ConfigError",
    "EgressConfig",
    "EgressPolicy",
    "EgressRules",
    "EgressViolation",
    "GrantedMount",
    "LimitsConfig",
    "LoopLimits",
    "MountArea",
    "MountError",
    "MountPolicy",
    "MountsConfig",
    "OutputStoreConfig",
    "PathPolicyViolation",
    "ShellConfig",
    "ShellLimits",
    "ShellMode",
    "ShellPolicy",
    "ShellPolicyViolation",
    "ShellSyntax",
    "ShellVerdict",
    "ToolOverride",
    "ToolcageConfig",
    "WebSearchConfig",
    "blocked_reason",
    "canonical_guest_path",
    "load_config",
    "protected_env_reason",
]

publish(globals(), __all__)
del publish
