"""``make bench``: run every benchmark module in this folder and print its report.

Each ``bench_*.py`` exposes ``run() -> list[str]``. Figures are measured on the machine at
hand, so read them as that machine's, and compare before/after on the same one. The lines
that hold a figure against its target (they say "met"/"not met", "meets"/"MISSES") are
printed again at the end, under ``== targets``.
"""

from __future__ import annotations

import importlib
import re
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
VERDICT = re.compile(r"target.*\b(met|not met|meets|MISSES)\b")


def main(selected: list[str]) -> int:
    sys.path.insert(0, str(HERE.parent.parent))
    failed = 0
    verdicts: list[str] = []
    for path in sorted(HERE.glob("bench_*.py")):
        name = path.stem
        if selected and name.removeprefix("bench_") not in selected:
            continue
        print(f"== {name}", flush=True)
        started = time.perf_counter()
        try:
            module = importlib.import_module(f"tests.bench.{name}")
            for line in module.run():
                print(f"   {line}", flush=True)
                if VERDICT.search(line):
                    verdicts.append(f"{name.removeprefix('bench_')}: {line.strip()}")
        except Exception:
            failed += 1
            traceback.print_exc()
        print(f"   ({time.perf_counter() - started:.1f} s)", flush=True)
    if verdicts:
        print("== targets")
        for line in verdicts:
            print(f"   {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
