"""What a config file alone cannot tell: checked when a runtime is built from it.

:func:`~toolcage.policies.load_config` validates a file without looking at anything else.
``Runtime.from_config`` then checks the config against the runtime and the filesystem, and
refuses it with a :class:`~toolcage.policies.ConfigError` naming each problem's key path:

- every tool the config names is a tool of the runtime (the built-in tools and the host
  tools given to ``from_config``): ``[tools.NAME]``, ``approval.auto_approve``,
  ``[agents.*].tools``, a mount area's ``tools``, ``[egress.tools.NAME]``,
  ``[egress.grants]`` and a rate limit's ``tools``;
- every mount's host directory exists and is a directory, unless its area says
  ``create = true``; no two mounts share a host directory or nest one in the other;
- the shell's workspace, when it exists, is a directory;
- with ``[state]`` enabled: the vault directory exists and no mount reaches it or the
  embedded store's file (a guest must never read the vault or other users' notes), and
  the environment variables the section names for secrets are set; with ``[state]``
  disabled and ``[rate_limits]`` configured, no mount reaches the store's file (which
  holds the counters);
- no ``[secrets.NAME] from_file`` lies inside anything a tool can read: a mount area, the
  shell's workspace (unless the shell is disabled) or a directory shown to a sandboxed MCP
  server -- compared after resolving symbolic links on both sides, so a link to the file
  or a mount through a link is caught too. (Inside a mount, a guest's path is resolved the
  same way and a hard link is refused, see :mod:`toolcage.policies._paths`.)

Nothing is created here: directories an area may create are made on first use.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterator
from pathlib import Path

from toolcage.policies import ConfigError, ShellMode, ToolcageConfig
from toolcage.policies._rate_limits import CLASSES as RATE_LIMIT_CLASSES


def check_config(config: ToolcageConfig, tools: Collection[str]) -> None:
    """Raise :class:`ConfigError` listing every problem (see the module docstring)."""
    problems = [
        *_unknown_tools(config, tools),
        *_mount_problems(config),
        *_shell_problems(config),
        *_state_problems(config),
        *_secret_problems(config),
    ]
    if problems:
        raise ConfigError("; ".join(problems))


def _unknown_tools(config: ToolcageConfig, tools: Collection[str]) -> Iterator[str]:
    named: list[tuple[str, str]] = [(f"tools.{name}", name) for name in config.tools]
    named += [("approval.auto_approve", name) for name in config.approval.auto_approve]
    for agent_id, agent in config.agents.items():
        named += [(f"agents.{agent_id}.tools", name) for name in agent.tools]
    for index, area in enumerate(config.mounts.areas):
        named += [(f"mounts.areas.{index}.tools.{name}", name) for name in area.tools]
    named += [(f"egress.tools.{name}", name) for name in config.egress.tools]
    named += [(f"egress.grants.{name}", name) for name in config.egress.grants]
    for limit, settings in config.rate_limits.items():
        where = f"rate_limits.{limit}.tools"
        named += [(where, name) for name in settings.tools if name not in RATE_LIMIT_CLASSES]
    for where, name in named:
        if name not in tools:
            yield f"{where}: unknown tool {name!r}{_suggestion(name, tools)}"


def _suggestion(name: str, tools: Collection[str]) -> str:
    close = difflib.get_close_matches(name, list(tools), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _mount_problems(config: ToolcageConfig) -> Iterator[str]:
    configured = bool(config.mounts.areas)
    seen: list[tuple[str, Path]] = []
    for index, area in enumerate(config.mounts.effective_areas):
        where = f"mounts.areas.{index}.host" if configured else f"the default mount {area.guest}"
        host = (config.base_dir / area.host).resolve()
        if host.exists() and not host.is_dir():
            yield f"{where}: {host} is not a directory"
            continue
        if not host.exists() and not area.create:
            yield f"{where}: {host} does not exist (create it, or set create = true)"
            continue
        for other_where, other in seen:
            if host == other or host.is_relative_to(other) or other.is_relative_to(host):
                yield (
                    f"{where}: {host} overlaps {other} ({other_where}); a host directory may "
                    "be mounted only once and not inside another"
                )
                break
        seen.append((where, host))


def _shell_problems(config: ToolcageConfig) -> Iterator[str]:
    if config.shell.mode is ShellMode.DISABLED:
        return
    workspace = config.shell.workspace_path(config.base_dir)
    if workspace.exists() and not workspace.is_dir():
        yield f"shell.workspace: {workspace} is not a directory"


def _state_problems(config: ToolcageConfig) -> Iterator[str]:
    state = config.state
    mounts = [(config.base_dir / area.host).resolve() for area in config.mounts.effective_areas]
    if not state.enabled:  # rate limits keep their counters in the store all the same
        if config.rate_limits:
            yield from _store_in_mounts(config, mounts)
        return
    vault = state.vault.resolved_dir(config.base_dir)
    if vault is not None:
        if not vault.is_dir():
            yield f"state.vault.dir: {vault} is not a directory"
        for host in mounts:
            if vault == host or vault.is_relative_to(host) or host.is_relative_to(vault):
                yield f"state.vault.dir: {vault} overlaps the mounted {host}; guests would see it"
    yield from _store_in_mounts(config, mounts)
    for secret in (state.token, state.embedder.key):
        try:
            secret()
        except ValueError as exc:  # it names the key and the variable
            yield str(exc)


def _readable_dirs(config: ToolcageConfig) -> Iterator[tuple[str, Path]]:
    """Every host directory some tool can read, resolved, with the key that names it."""
    configured = bool(config.mounts.areas)
    for index, area in enumerate(config.mounts.effective_areas):
        where = f"mounts.areas.{index}.host" if configured else f"the default mount {area.guest}"
        yield where, (config.base_dir / area.host).resolve()
    if config.shell.mode is not ShellMode.DISABLED:
        yield "shell.workspace", config.shell.workspace_path(config.base_dir)
    for index, server in enumerate(config.mcp.servers):
        if server.command is not None and server.sandbox:
            for field in ("read_only", "read_write"):
                for path in getattr(server, field):
                    yield f"mcp.servers.{index}.{field}", (config.base_dir / path).resolve()


def _secret_problems(config: ToolcageConfig) -> Iterator[str]:
    readable = list(_readable_dirs(config)) if config.secrets else []
    for name, secret in config.secrets.items():
        if secret.from_file is None:
            continue
        file = (config.base_dir / secret.from_file).resolve()
        for where, host in readable:
            if file.is_relative_to(host):
                yield (
                    f"secrets.{name}.from_file: {file} is inside {host} ({where}); tools "
                    "would read the secret"
                )
                break


def _store_in_mounts(config: ToolcageConfig, mounts: list[Path]) -> Iterator[str]:
    path = config.state.embedded_path(config.base_dir)
    if path is not None:
        file = path.resolve()
        for host in mounts:
            if file.is_relative_to(host):
                yield f"state.url: {file} is inside the mounted {host}; guests would read it"
