"""The libSQL client is an extra (``toolcage[libsql]``): without it the default install works,
and a config naming a libSQL server is refused by key, saying what to install.

"Without it" is made real by hiding the installed package: ``sys.modules[name] = None`` is
how Python spells a module that cannot be imported.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from toolcage.host_bindings._store import StoreUnavailable, open_store
from toolcage.policies import ConfigError
from toolcage.runtime import Runtime

pytestmark = pytest.mark.anyio

REMOTE = '[state]\nurl = "libsql://db.example.com"\n'
HIDDEN = "import sys; sys.modules['libsql_client'] = None; "


@pytest.fixture
def without_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "libsql_client", None)


@pytest.mark.usefixtures("without_client")
class TestWithoutTheClient:
    async def test_the_default_config_runs(self, tmp_path: Path) -> None:
        (tmp_path / "toolcage.toml").write_text("")
        async with Runtime.from_config(tmp_path / "toolcage.toml") as runtime:
            saved = await runtime.execute("memory_save", {"content": "kept locally"})
        assert not saved.is_error, saved.envelope()

    def test_a_libsql_url_is_a_config_error_saying_what_to_install(self, tmp_path: Path) -> None:
        (tmp_path / "toolcage.toml").write_text(REMOTE)
        with pytest.raises(ConfigError, match=r"state\.url.*pip install 'toolcage\[libsql\]'"):
            Runtime.from_config(tmp_path / "toolcage.toml")

    def test_opening_a_store_directly_says_so_too(self, tmp_path: Path) -> None:
        with pytest.raises(StoreUnavailable, match=r"toolcage\[libsql\]"):
            open_store("libsql://db.example.com", base_dir=tmp_path)

    def test_the_command_names_the_key_and_the_extra(self, tmp_path: Path) -> None:
        (tmp_path / "toolcage.toml").write_text(REMOTE)
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                HIDDEN + "from toolcage.runtime.cli import main; sys.exit(main())",
                "tools",
                "--config",
                str(tmp_path / "toolcage.toml"),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert "state.url" in done.stderr
        assert "pip install 'toolcage[libsql]'" in done.stderr
        assert "Traceback" not in done.stderr
