"""What a config file alone cannot tell: checked when a runtime is built from it.

:func:`~toolcage.policies.load_config` validates a file without looking at anything else.
``Runtime.from_config`` then checks the config against the runtime and the filesystem, and
refuses it with a :class:`~toolcage.policies.ConfigError` naming each problem's key path:

- every tool the config names is a tool of the runtime (the built-in tools and the host
  tools given to ``from_config``): ``[tools.NAME]``, ``approval.auto_approve``,
  ``[agents.*].tools``, a mount area's ``tools``, ``[egress.tools.NAME]``,
  ``[egress.grants]`` and a rate limit's ``tools`` (a name of an MCP server that did not
  start, ``SERVER__...``, passes: its tools are not known yet);
- every mount's host directory exists and is a directory, unless its area says
  ``create = true``; no two mounts share a host directory or nest one in the other --
  for hosts naming the principal (``users/{user}``), for any principals
  (:func:`~toolcage.policies._host_template.may_overlap`);
- the shell's workspace, when it exists, is a directory (for one naming the principal, the
  directory it is made in); a workspace or mount naming the principal is either the same
  template as the other or apart from it for every principal;
- with ``[state]`` enabled: the vault directory exists and no mount (nor a shell workspace
  naming the principal) reaches it or the embedded store's file (a guest must never read
  the vault or other users' notes), and the environment variables the section names for
  secrets are set; with ``[state]`` disabled and ``[rate_limits]`` configured, no mount
  reaches the store's file (which holds the counters).
- no ``[secrets.NAME] from_file`` lies inside anything a tool can read: a mount area (for
  any principal, when its host names one), the shell's workspace (unless the shell is
  disabled) or a directory shown to a sandboxed MCP server -- compared after resolving
  symbolic links on both sides, so a link to the file or a mount through a link is caught
  too. (Inside a mount, a guest's path is resolved the same way and a hard link is
  refused, see :mod:`toolcage.policies._paths`.)

Nothing is created here: directories an area may create are made on first use.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterator

from toolcage.policies import ConfigError, HostTemplate, MountArea, ShellMode, ToolcageConfig
from toolcage.policies._host_template import may_overlap
from toolcage.policies._mount_areas import overlap_message
from toolcage.policies._rate_limits import CLASSES as RATE_LIMIT_CLASSES


def check_config(
    config: ToolcageConfig, tools: Collection[str], *, withheld: Collection[str] = ()
) -> None:
    """Raise :class:`ConfigError` listing every problem (see the module docstring); a
    name starting with one of the ``withheld`` prefixes (the tools of an MCP server that
    did not start, not known yet) is not checked."""
    mounts = _mounts(config)
    problems = [
        *_unknown_tools(config, tools, tuple(withheld)),
        *_mount_problems(mounts),
        *_shell_problems(config, mounts),
        *_state_problems(config, mounts),
        *_secret_problems(config, mounts),
    ]
    if problems:
        raise ConfigError("; ".join(problems))


def _unknown_tools(
    config: ToolcageConfig, tools: Collection[str], withheld: tuple[str, ...]
) -> Iterator[str]:
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
        if name not in tools and not name.startswith(withheld):
            yield f"{where}: unknown tool {name!r}{_suggestion(name, tools)}"


def _suggestion(name: str, tools: Collection[str]) -> str:
    close = difflib.get_close_matches(name, list(tools), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


Mount = tuple[str, MountArea, HostTemplate]
"""A mount area: the key that names its host, the area, and its host resolved."""


def _mounts(config: ToolcageConfig) -> list[Mount]:
    configured = bool(config.mounts.areas)
    return [
        (
            f"mounts.areas.{index}.host" if configured else f"the default mount {area.guest}",
            area,
            HostTemplate.parse(area.host).absolute(config.base_dir),
        )
        for index, area in enumerate(config.mounts.effective_areas)
    ]


def _mount_problems(mounts: list[Mount]) -> Iterator[str]:
    seen: list[HostTemplate] = []
    for where, area, template in mounts:
        host = template.fixed
        if host.exists() and not host.is_dir():
            yield f"{where}: {host} is not a directory"
            continue
        if not host.exists() and not area.create:
            yield f"{where}: {host} does not exist (create it, or set create = true)"
            continue
        for other_index, other in enumerate(seen):
            if may_overlap(template, other):
                yield f"{where}: {overlap_message(template, other, other_index)}"
                break
        seen.append(template)


def _shell_problems(config: ToolcageConfig, mounts: list[Mount]) -> Iterator[str]:
    if config.shell.mode is ShellMode.DISABLED:
        return
    workspace = config.shell.workspace_template(config.base_dir)
    if workspace.fixed.exists() and not workspace.fixed.is_dir():
        yield f"shell.workspace: {workspace.fixed} is not a directory"
    for _, area, mount in mounts:
        if not (workspace.per_principal or mount.per_principal) or mount == workspace:
            continue  # the same directory for the same principal, or no principal named
        if may_overlap(workspace, mount):
            yield (
                f"shell.workspace: {workspace} may be the same directory as the mount of "
                f"{area.guest} ({mount}), or hold it or lie inside it, for some user or "
                "agent; name the same directory in both, or directories apart"
            )


def _state_problems(config: ToolcageConfig, areas: list[Mount]) -> Iterator[str]:
    state = config.state
    mounts = [template for _, _, template in areas]
    workspace = config.shell.workspace_template(config.base_dir)
    if workspace.per_principal and config.shell.mode is not ShellMode.DISABLED:
        mounts.append(workspace)  # commands see their user's workspace as guests their mounts
    if not state.enabled:  # rate limits keep their counters in the store all the same
        if config.rate_limits:
            yield from _store_in_mounts(config, mounts)
        return
    vault = state.vault.resolved_dir(config.base_dir)
    if vault is not None:
        if not vault.is_dir():
            yield f"state.vault.dir: {vault} is not a directory"
        for host in mounts:
            if may_overlap(HostTemplate(vault), host):
                yield f"state.vault.dir: {vault} overlaps the mounted {host}; guests would see it"
    yield from _store_in_mounts(config, mounts)
    for secret in (state.token, state.embedder.key):
        try:
            secret()
        except ValueError as exc:  # it names the key and the variable
            yield str(exc)


def _readable_dirs(
    config: ToolcageConfig, mounts: list[Mount]
) -> Iterator[tuple[str, HostTemplate]]:
    """Every host directory some tool can read, resolved, with the key that names it."""
    for where, _, template in mounts:
        yield where, template
    if config.shell.mode is not ShellMode.DISABLED:
        yield "shell.workspace", config.shell.workspace_template(config.base_dir)
    for index, server in enumerate(config.mcp.servers):
        if server.command is not None and server.sandbox:
            for field in ("read_only", "read_write"):
                for path in getattr(server, field):
                    resolved = HostTemplate((config.base_dir / path).resolve())
                    yield f"mcp.servers.{index}.{field}", resolved


def _secret_problems(config: ToolcageConfig, mounts: list[Mount]) -> Iterator[str]:
    readable = list(_readable_dirs(config, mounts)) if config.secrets else []
    for name, secret in config.secrets.items():
        if secret.from_file is None:
            continue
        file = HostTemplate((config.base_dir / secret.from_file).resolve())
        for where, host in readable:
            if _inside(file, host):
                yield (
                    f"secrets.{name}.from_file: {file} is inside {host} ({where}); tools "
                    "would read the secret"
                )
                break


def _inside(file: HostTemplate, host: HostTemplate) -> bool:
    """Whether ``file`` is, for some principal, ``host`` or beneath it."""
    return len(file.parts) >= len(host.parts) and may_overlap(file, host)


def _store_in_mounts(config: ToolcageConfig, mounts: list[HostTemplate]) -> Iterator[str]:
    path = config.state.embedded_path(config.base_dir)
    if path is not None:
        file = HostTemplate(path.resolve())
        for host in mounts:
            if _inside(file, host):
                yield f"state.url: {file} is inside the mounted {host}; guests would read it"
