"""``make demo``: toolcage's main job on the embedded default config.

A model-like script of tool calls goes through the real pipeline -- WASI-sandboxed file
tools on the default ``./workspace`` mount, a refused path traversal, the clock, one
approved shell command in the sandboxed sidecar, and the agent's memory (save, search,
update, delete) and scratchpad in the embedded state store (``./.toolcage/state.db``), and
a schedule created and listed there -- and every result envelope is printed. ``$note_id``
in arguments stands for the id of the note the script saved last.
"""

from __future__ import annotations

import json
from typing import Any

import anyio

from .._approval import Approval, ApprovalRequest, CallbackApproval
from .._runtime import Runtime

SCRIPT: list[tuple[str, dict[str, Any], str]] = [
    (
        "file_write",
        {
            "path": "/workspace/demo/hello.md",
            "content": "# Hello\n\ntoolcage says hi.\n",
            "create_parents": True,
        },
        "write a file inside the workspace",
    ),
    (
        "file_edit",
        {"path": "/workspace/demo/hello.md", "old_string": "says hi", "new_string": "says hello"},
        "edit it in place",
    ),
    ("file_read", {"path": "/workspace/demo/hello.md"}, "read it back"),
    ("file_list", {"path": "/workspace/demo"}, "list the directory"),
    ("file_search", {"path": "/workspace", "query": "hello"}, "search the workspace"),
    ("file_read", {"path": "/workspace/../../../etc/passwd"}, "a path traversal: refused"),
    ("file_read", {"path": "/etc/shadow"}, "a path outside every mount: refused"),
    ("file_write", {"path": "/workspace/x.txt", "content": 42}, "a wrong type: validation"),
    ("get_current_time", {"timezone": "Europe/Paris"}, "the host clock, in a guest"),
    ("shell_exec", {"command": "pwd && cat demo/hello.md"}, "a shell command, approved"),
    ("shell_exec", {"command": "cat /etc/shadow; curl http://example.com"}, "refused by policy"),
    ("no_such_tool", {}, "an unknown tool"),
    (
        "memory_save",
        {"content": "The user prefers green tea, no sugar.", "tags": [" Preferences ", "drinks"]},
        "remember a preference (tags trimmed and lowercased)",
    ),
    ("memory_search", {"query": "tea", "tags": ["preferences"]}, "find it again"),
    (
        "memory_update",
        {"note_id": "$note_id", "content": "The user now prefers jasmine tea.", "tags": ["drinks"]},
        "replace it under the same id",
    ),
    ("memory_search", {"query": "jasmine"}, "the new text is found"),
    ("memory_delete", {"note_id": "$note_id"}, "forget it"),
    ("memory_search", {"query": "tea"}, "nothing left to find"),
    (
        "scratchpad_write",
        {"items": ["read the config", "write the summary"]},
        "note this session's sub-goals",
    ),
    ("scratchpad_read", {}, "read them back"),
    ("scratchpad_clear", {}, "and clear the pad"),
    (
        "schedule_create",
        {
            "goal": "Summarise the unread mail in my inbox in five bullet points.",
            "cadence_type": "cron",
            "cadence_value": "0 9 * * 1-5",
            "timezone": "Europe/Paris",
            "name": "weekday inbox summary",
        },
        "schedule a goal for every weekday at 9:00 Paris time",
    ),
    ("schedule_search", {"status": "active"}, "list the active schedules"),
]


def _approve(request: ApprovalRequest) -> Approval:
    print(f"   [approver] allowing {request.tool} {json.dumps(dict(request.arguments))}")
    return Approval.ALLOW_ONCE


async def main() -> None:
    async with Runtime.from_config(None, approval=CallbackApproval(_approve)) as runtime:
        missing = {name for name, _, _ in SCRIPT if name not in runtime.registry} - {"no_such_tool"}
        if missing:
            raise SystemExit(f"toolcage demo: tools missing from this build: {sorted(missing)}")
        print("toolcage demo — tools on the default config:")
        for row in runtime.registry.listing():
            summary = row.description.split("\n", 1)[0]
            print(f"  {row.name:<18} {row.safety_tier.value:<14} {summary}")
        note_id = ""
        for name, script_arguments, why in SCRIPT:
            arguments = {k: note_id if v == "$note_id" else v for k, v in script_arguments.items()}
            print(f"\n-- {why}\n   call {name} {json.dumps(arguments)}")
            result = await runtime.execute(name, arguments)
            if name == "memory_save" and not result.is_error:
                note_id = json.loads(result.output_text)["note_id"]
            envelope = json.dumps(result.envelope(), ensure_ascii=False, indent=2)
            print("   " + envelope.replace("\n", "\n   "))


if __name__ == "__main__":
    anyio.run(main)
