"""A command's pid 1 in a session's sandbox: the runner's small init, out of the command's reach.

The init shares the command's uid, so only its not being dumpable keeps the command from
tracing it or reading its memory -- a copy of the runner's, holding what earlier commands
of the session sent. Run through a daemon started without its policy (``cat /proc/1/...``
is the sandbox's to refuse here, not the policy's).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from toolcage.sidecar import SidecarClient
from toolcage.sidecar._sandbox import RUNNER

from .conftest import Daemon

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not RUNNER.is_file(), reason="the session runner is not built"),
]


@pytest.fixture
async def unchecked(daemon: Daemon) -> AsyncIterator[SidecarClient]:
    async with daemon.client() as client:
        yield client


async def sh(client: SidecarClient, session: str, command: str) -> dict[str, Any]:
    return await client.request(
        "exec", session=session, command=command, timeout=30, output_bytes=65536
    )


async def test_a_command_cannot_read_or_trace_its_init(unchecked: SidecarClient) -> None:
    session = f"init-{uuid.uuid4().hex[:8]}"
    secret = f"earlier-{uuid.uuid4().hex}"
    first = await sh(unchecked, session, f"export NOTE={secret}; true")
    assert first["exit_code"] == 0, first
    probe = "tr '\\0' ' ' < /proc/1/cmdline; echo; cat /proc/1/maps /proc/1/environ"
    result = await sh(unchecked, session, probe)
    assert result["stdout"].startswith("/run/toolcage/runner"), result  # the init is there
    assert result["exit_code"] != 0, result
    assert result["stderr"].count("Permission denied") == 2, result
    assert secret not in result["stdout"], result


async def test_a_command_leaves_nothing_in_the_sandboxs_root(unchecked: SidecarClient) -> None:
    """The root holds /bin and the others as links: a command that could replace one would
    run its own program, not bash with the prelude and its limits, for every later command."""
    session = f"root-{uuid.uuid4().hex[:8]}"
    plant = "rm /bin; mkdir /run/planted; touch /planted; ls -d /bin /run/planted /planted"
    planted = await sh(unchecked, session, plant)
    assert planted["stderr"].count("Read-only file system") == 3, planted
    after = await sh(unchecked, session, "readlink /bin; ls / /run")
    assert after["exit_code"] == 0, after
    assert after["stdout"].splitlines()[0] == "usr/bin", after
    assert "planted" not in after["stdout"], after
