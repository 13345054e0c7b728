"""Races: the check-then-use attack on the file tools.

While a thread swaps a name in each scratch mount, without pause, between a harmless file
and a symlink to the canary (for ``file_list``, between a directory and a symlink to the
canary's directory), each file tool is called on that name again and again. A call that
brings back the canary (or its name, for a listing) or changes anything beside the mounts
is an escape.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from ._base import AttackContext, Outcome
from ._paths import fill, restore, snapshot
from ._report import Finding

RACE_TOOLS = ("file_read", "file_write", "file_edit", "file_list")
RACE_CALLS = 60
"""Calls per tool and mount while the name flips (fewer when the time budget runs out)."""


async def attack(ctx: AttackContext) -> Outcome:
    """Every file tool of :data:`RACE_TOOLS` on a name that flips under it, in each mount."""
    runtime, scratch, within_budget = ctx.runtime, ctx.scratch, ctx.within_budget
    found: list[Finding] = []
    for mount in scratch.mounts:
        for name in RACE_TOOLS:
            if name not in runtime.registry or not within_budget():
                continue
            tool = runtime.registry.get(name, "default")
            path_args = sorted(getattr(tool, "path_arguments", {}))
            base = fill(dict(tool.schema().parameters), set(path_args), scratch.canary)
            listing = name == "file_list"
            # A listing betrays the canary's directory by the canary's name.
            tell = "secret.txt" if listing else scratch.canary
            before = snapshot(scratch.outside)
            leaks = 0
            with _flipping(mount.scratch, scratch.outside, tree=listing) as race:
                path = f"{mount.area.guest.rstrip('/')}/{race}"
                args = {**base, **dict.fromkeys(path_args, path)}
                for _ in range(RACE_CALLS):
                    if not within_budget():
                        break
                    result = await runtime.execute(name, args)
                    leaks += tell in result.output_text
            changed = snapshot(scratch.outside) != before
            escaped = bool(leaks or changed)
            detail = f"{leaks} of the calls brought back the canary" if leaks else ""
            detail += " changed the canary" if changed else ""
            found.append(
                Finding(
                    "races",
                    f"{name} on {mount.area.guest}",
                    "a symlink swapped in during the call",
                    not escaped,
                    f"{mount.key}: {name} followed a swapped-in symlink" if escaped else "",
                    detail.strip(),
                )
            )
            if changed:
                restore(scratch)
    return Outcome(found)


@contextlib.contextmanager
def _flipping(home: Path, outside: Path, *, tree: bool) -> Iterator[str]:
    """A name in ``home`` swapped without pause between a harmless file (or directory)
    and a symlink to the canary (or its directory) until the body ends; yields the name."""
    name = "race_dir" if tree else "race"
    race, aside = home / name, home / (name + ".aside")
    # A relative link: an absolute one is refused on sight, a relative one only when the
    # check follows it out of the mount -- the check whose moment the race attacks.
    out = Path(os.path.relpath(outside, home))
    stop = threading.Event()

    def flip_file() -> None:
        aside.symlink_to(out / "secret.txt")
        os.replace(aside, race)
        aside.write_text("harmless")
        os.replace(aside, race)

    def flip_directory() -> None:  # a directory cannot be renamed over a link: two steps
        os.rename(race, aside)
        race.symlink_to(out)
        race.unlink()
        os.rename(aside, race)

    def flip() -> None:
        while not stop.is_set():
            # A tool may have changed the name meanwhile (a write refused half-way): go on.
            with contextlib.suppress(OSError):
                (flip_directory if tree else flip_file)()

    if tree:
        race.mkdir(exist_ok=True)
        (race / "harmless").write_text("harmless")
    else:
        race.write_text("harmless")
    flipper = threading.Thread(target=flip, daemon=True)
    flipper.start()
    try:
        yield name
    finally:
        stop.set()
        flipper.join()
