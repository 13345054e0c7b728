"""Display lines: the SDK's rule (``tc_result_display``) and the host's (``display_line``)
are one rule, character for character.

A small guest built with the SDK sets its display line to every code point at once; the
line it sends must be exactly what the host makes of the same text, and the host's table of
format characters must be Unicode's category Cf.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
import wasmtime
from toolcage.runtime._display import FORMAT_RANGES, display_line
from toolcage.wasm_tools.build import SDK, build_cached, sdk_sources

GUEST = Path(__file__).parent / "sdk_guests/show_display.c"

EVERY_CHARACTER = "".join(chr(code) for code in range(1, 0x110000) if not 0xD800 <= code <= 0xDFFF)
"""Every code point but NUL (which ends a C string) and the surrogates (not UTF-8)."""


@pytest.fixture(scope="module")
def guest() -> tuple[wasmtime.Engine, wasmtime.Module]:
    # Built before the session's first test (tests/conftest.py), so this only finds it.
    (out,) = build_cached([GUEST, *sdk_sources()], include=[SDK])
    engine = wasmtime.Engine()
    return engine, wasmtime.Module.from_file(engine, str(out))


def sdk_display(guest: tuple[wasmtime.Engine, wasmtime.Module], line: str, tmp: Path) -> str:
    """The display line the SDK sends for ``line``."""
    engine, module = guest
    stdin, stdout = tmp / "stdin", tmp / "stdout"
    stdin.write_text(json.dumps({"line": line}), encoding="utf-8")
    wasi = wasmtime.WasiConfig()
    wasi.stdin_file = str(stdin)
    wasi.stdout_file = str(stdout)
    store = wasmtime.Store(engine)
    store.set_wasi(wasi)
    linker = wasmtime.Linker(engine)
    linker.define_wasi()
    start = linker.instantiate(store, module).exports(store)["_start"]
    assert isinstance(start, wasmtime.Func)
    start(store)
    document = json.loads(stdout.read_text(encoding="utf-8"))
    assert document["ok"] is True, document
    return str(document["display"])


class TestOneRule:
    def test_the_sdk_shows_every_character_as_the_host_does(
        self, guest: tuple[wasmtime.Engine, wasmtime.Module], tmp_path: Path
    ) -> None:
        shown = sdk_display(guest, EVERY_CHARACTER, tmp_path)
        expected = display_line(EVERY_CHARACTER)
        if shown != expected:  # name the first character they differ on, not 4 MB of text
            at = next(i for i, (a, b) in enumerate(zip(shown, expected, strict=False)) if a != b)
            pytest.fail(f"they differ from {shown[at : at + 20]!r} / {expected[at : at + 20]!r}")

    @pytest.mark.parametrize(
        ("line", "shown"),
        [
            ("Fetched \u202eexe.txt (1 KB)", "Fetched \\u202eexe.txt (1 KB)"),
            ("csi \u009b31m red", "csi \\u009b31m red"),
            ("esc \x1b[31m", "esc  [31m"),
            ("two\nlines\u2028three", "two lines\\u2028three"),
            ("zero\u200bwidth \ufeffbom", "zero\\u200bwidth \\ufeffbom"),
            ("tag \U000e0041", "tag \\U000e0041"),
            (
                "caf\u00e9 \u6587\u5b57 \U0001f600 back\\slash",
                "caf\u00e9 \u6587\u5b57 \U0001f600 back\\slash",
            ),
        ],
    )
    def test_what_a_line_becomes(
        self,
        guest: tuple[wasmtime.Engine, wasmtime.Module],
        tmp_path: Path,
        line: str,
        shown: str,
    ) -> None:
        assert display_line(line) == shown
        assert sdk_display(guest, line, tmp_path) == shown


class TestFormatCharacters:
    def test_the_table_is_unicodes_category_cf(self) -> None:
        """Every Cf character this Python knows is in the table; the table's others are
        characters a later Unicode made Cf (unassigned here)."""
        table = {code for low, high in FORMAT_RANGES for code in range(low, high + 1)}
        known = {code for code in range(0x110000) if unicodedata.category(chr(code)) == "Cf"}
        assert known <= table
        assert {unicodedata.category(chr(code)) for code in table - known} <= {"Cn"}

    def test_the_ranges_are_in_order(self) -> None:
        """The SDK's lookup stops at the first range past the character."""
        ends = [bound for low, high in FORMAT_RANGES for bound in (low, high)]
        assert ends == sorted(ends)
        assert all(low <= high for low, high in FORMAT_RANGES)
