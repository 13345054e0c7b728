"""The path policy as a :class:`~toolcage.runtime._security.SecurityCheck`.

A tool that takes paths says which arguments are paths and whether it reads, writes or
deletes through them (``path_arguments``, e.g. ``{"path": "read"}``). Before such a tool
runs, each of those arguments is canonicalised against the mounts the tool is granted
(:func:`toolcage.policies.canonical_guest_path`) and replaced by the canonical guest path
-- the mounts of the call's principal, where a mount's host directory names it;
a path that leaves the mounts, or writes to a read-only one, ends the call with
``permission_denied`` naming the allowed roots, and text that is no usable path at all
(empty, too long, a NUL byte) with ``validation_error`` naming the argument. A path
argument left out is checked as its schema's ``default`` (``file_list`` without ``path``
lists ``/workspace`` of the call's mounts, or is refused like ``"/workspace"`` would be);
one with no default stays out. Tools without ``path_arguments`` pass untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol, runtime_checkable

from toolcage.policies import (
    MountError,
    MountPolicy,
    PathPolicyViolation,
    canonical_guest_path,
)

from ._errors import PermissionDeniedError, ToolExecutionError, ToolValidationError
from ._tool import Tool, ToolExecutionContext

PathNeed = Literal["read", "write", "delete"]


@runtime_checkable
class HasPathArguments(Protocol):
    """A tool some of whose arguments are guest paths."""

    @property
    def path_arguments(self) -> Mapping[str, PathNeed]:
        """Argument name -> whether the tool reads, writes or deletes through that path."""
        ...


class PathCheck:
    """Keeps every path argument inside the mounts granted to its tool.

    ``Runtime.from_config`` gives it the :class:`MountPolicy` object its guest tools get.
    """

    policy_name = "path"
    """How audit records and spans name this check's verdicts."""

    def __init__(self, policy: MountPolicy) -> None:
        self.policy = policy

    def applies(self, tool: Tool) -> bool:
        """Whether the tool takes paths (only then does this check decide anything)."""
        return bool(getattr(tool, "path_arguments", None))

    def check(
        self, tool: Tool, args: Mapping[str, Any], ctx: ToolExecutionContext
    ) -> Mapping[str, Any]:
        """The arguments with each path canonicalised against the mounts of the call's
        principal, or :class:`PermissionDeniedError` (:class:`ToolValidationError` for a
        malformed path)."""
        # An attribute lookup, not isinstance(): a Protocol check costs microseconds a call.
        path_arguments: Mapping[str, PathNeed] | None = getattr(tool, "path_arguments", None)
        if not path_arguments:
            return args
        name = tool.schema().name
        try:
            mounts = self.policy.mounts_for(name, tool.safety_tier.value, ctx.principal)
        except MountError as exc:
            raise ToolExecutionError(f"the mounts are misconfigured: {exc}") from exc
        checked = dict(args)
        for arg, need in path_arguments.items():
            value = args.get(arg)
            if value is None:
                value = _default(tool, arg)
                if value is None:
                    continue
            if not isinstance(value, str):
                raise PermissionDeniedError(f"{arg} must be a path string", field=arg)
            try:
                checked[arg] = canonical_guest_path(value, mounts, need)
            except PathPolicyViolation as exc:
                if exc.malformed:
                    raise ToolValidationError(f"{name}: {arg}: {exc.reason}", field=arg) from exc
                raise PermissionDeniedError(f"{name}: {exc}", field=arg) from exc
        return checked


def _default(tool: Tool, arg: str) -> Any:
    """The ``default`` the schema of ``tool`` gives parameter ``arg`` (``None``: none)."""
    spec = tool.schema().parameters.get("properties", {}).get(arg)
    return spec.get("default") if isinstance(spec, Mapping) else None
