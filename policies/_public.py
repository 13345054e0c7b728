"""Exported names report the module users import them from.

A class defined in ``toolcage/runtime/_result.py`` and exported by ``toolcage.runtime`` says
``toolcage.runtime.ToolResult`` in reprs, tracebacks and docs, the way httpx's names say
``httpx``. It lives here, in the package that imports nothing of the others, so that every
package of toolcage can use it.

Annotations are strings here (``from __future__ import annotations``), which
:func:`typing.get_type_hints` resolves in the namespace of a class's module; so each class's
own annotations are resolved first, while its module is still the one that defines it.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterable, MutableMapping
from typing import Any


def publish(
    namespace: MutableMapping[str, Any], names: Iterable[str], *, within: str | None = None
) -> None:
    """Give each of ``names`` in ``namespace`` (a module's globals) that module's name.

    Only classes and functions defined in the modules under ``within`` (by default the
    module itself, a package) are renamed; names re-exported from elsewhere keep theirs.
    """
    module = namespace["__name__"]
    prefix = (within or module) + "."
    for name in names:
        value = namespace[name]
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue
        home = value.__module__
        if home == module or not home.startswith(prefix):
            continue
        if inspect.isclass(value):
            _resolve_own_annotations(value)
        value.__module__ = module


def _resolve_own_annotations(cls: type) -> None:
    own = inspect.get_annotations(cls)
    if not own or not any(isinstance(v, str) for v in own.values()):
        return
    hints = typing.get_type_hints(cls, include_extras=True)
    type.__setattr__(cls, "__annotations__", {k: hints.get(k, v) for k, v in own.items()})
