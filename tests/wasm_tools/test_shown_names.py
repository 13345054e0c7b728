"""The SDK's one form for names in output (``tc_buf_put_name``), byte for byte.

A small guest built with the SDK shows arbitrary byte strings -- every single byte, every
two-byte pair with a lead byte, every code point's UTF-8, and random strings -- and each
must come out exactly as the documented form says (:func:`shown` of the adversarial suite,
an independent implementation), on one line, with nothing that a terminal would act on;
the host's own port (:func:`~toolcage.host_bindings._names.shown_name`) shows each the same.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest
import wasmtime
from toolcage.host_bindings._names import shown_name
from toolcage.wasm_tools.build import SDK, build_cached, sdk_sources

from tests.adversarial.test_name_forging import shown

GUEST = Path(__file__).parent / "sdk_guests/show_names.c"


Guest = tuple[wasmtime.Engine, wasmtime.Module]


@pytest.fixture(scope="module")
def show() -> Guest:
    # Built before the session's first test (tests/conftest.py), so this only finds it.
    (out,) = build_cached([GUEST, *sdk_sources()], include=[SDK])
    engine = wasmtime.Engine()
    return engine, wasmtime.Module.from_file(engine, str(out))


def run(guest: Guest, names: list[bytes], tmp: Path) -> list[str]:
    engine, module = guest
    stdin = tmp / "stdin"
    stdout = tmp / "stdout"
    stdin.write_bytes(b"".join(struct.pack("<I", len(name)) + name for name in names))
    wasi = wasmtime.WasiConfig()
    wasi.stdin_file = str(stdin)
    wasi.stdout_file = str(stdout)
    store = wasmtime.Store(engine)
    store.set_wasi(wasi)
    linker = wasmtime.Linker(engine)
    linker.define_wasi()
    start = linker.instantiate(store, module).exports(store)["_start"]
    assert isinstance(start, wasmtime.Func)
    start(store)  # returns from main without calling exit
    text = stdout.read_bytes().decode("utf-8")  # the shown form is always UTF-8
    return text.split("\n")[:-1]


def samples() -> list[bytes]:
    rng = random.Random(11)  # noqa: S311 (test data, not secrets)
    names = [bytes([b]) for b in range(256)]
    names += [bytes([lead, b]) for lead in (0xC2, 0xC3, 0xE2, 0xF0, 0xF4) for b in range(256)]
    names += [chr(cp).encode("utf-8") for cp in range(0x80, 0x3000)]
    names += [chr(cp).encode("utf-8") for cp in (0xFEFF, 0xFFFD, 0x10FFFF, 0x1F600)]
    names += [b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xf8\x88"]
    names += [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40))) for _ in range(3000)]
    alphabet = [b"a", b"\\", b"\n", b"\x1b", "\u0085".encode(), "\u202e".encode(), b"\xff"]
    names += [b"".join(rng.choices(alphabet, k=12)) for _ in range(500)]
    return names


class TestShownNames:
    def test_every_byte_string_is_shown_in_the_documented_form(
        self, show: Guest, tmp_path: Path
    ) -> None:
        names = samples()
        lines = run(show, names, tmp_path)
        assert len(lines) == len(names)
        wrong = [(n, got) for n, got in zip(names, lines, strict=True) if got != shown(n)]
        assert wrong == []

    def test_the_host_shows_every_name_as_the_sdk_does(self, show: Guest, tmp_path: Path) -> None:
        """The host's port (relay tools' details and display lines), byte for byte."""
        names = samples()
        assert [shown_name(name) for name in names] == run(show, names, tmp_path)

    def test_the_form_can_be_read_back(self, show: Guest, tmp_path: Path) -> None:
        """Unambiguous: different names are shown differently."""
        names = sorted(set(samples()))
        lines = run(show, names, tmp_path)
        assert len(set(lines)) == len(names)
