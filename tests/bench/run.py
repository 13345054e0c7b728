"""``make bench``: run every benchmark module in this folder and print its report.

Each ``bench_*.py`` exposes ``run() -> list[str]``. Figures are measured on the machine at
hand, so read them as that machine's, and compare before/after on the same one.
"""

from __future__ import annotations

import importlib
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(selected: list[str]) -> int:
    sys.path.insert(0, str(HERE.parent.parent))
    failed = 0
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
        except Exception:
            failed += 1
            traceback.print_exc()
        print(f"   ({time.perf_counter() - started:.1f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
