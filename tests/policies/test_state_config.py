"""The ``[state]`` section: defaults, and bad values refused at load naming their key."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolcage.policies import ConfigError, load_config


class TestDefaults:
    def test_embedded_store_under_the_config_directory(self, tmp_path: Path) -> None:
        config = load_config(None)
        assert config.state.enabled is True
        assert config.state.embedder.kind == "none"
        assert config.state.vault.dir is None
        assert dict(config.state.vault.grants) == {"default": ("*",)}
        path = tmp_path / "toolcage.toml"
        path.write_text("")
        loaded = load_config(path)
        assert loaded.state.embedded_path(loaded.base_dir) == tmp_path / ".toolcage/state.db"
        assert loaded.state.store_url(loaded.base_dir) == f"sqlite://{tmp_path}/.toolcage/state.db"

    @pytest.mark.parametrize(
        ("url", "file"),
        [
            ("notes.db", "notes.db"),
            ("sqlite:sub/notes.db", "sub/notes.db"),
            ("file:notes%20x.db", "notes x.db"),
            ("sqlite:///abs/notes.db", "/abs/notes.db"),
            ("/abs/notes.db", "/abs/notes.db"),
        ],
    )
    def test_embedded_urls(self, tmp_path: Path, url: str, file: str) -> None:
        config = load_config(_write(tmp_path, f'[state]\nurl = "{url}"\n'))
        path = tmp_path / file
        assert config.state.embedded_path(config.base_dir) == path
        assert not config.state.remote

    @pytest.mark.parametrize("url", ["libsql://db.example.com", "https://db.example.com:8080"])
    def test_remote_urls_are_kept(self, tmp_path: Path, url: str) -> None:
        config = load_config(_write(tmp_path, f'[state]\nurl = "{url}"\n'))
        assert config.state.remote
        assert config.state.embedded_path(config.base_dir) is None
        assert config.state.store_url(config.base_dir) == url

    def test_secrets_from_the_environment(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        text = '[state]\nurl = "libsql://db.example.com"\nauth_token_env = "TC_TOKEN"\n'
        config = load_config(_write(tmp_path, text))
        monkeypatch.setenv("TC_TOKEN", "s3cr3t-value")
        assert config.state.token() == "s3cr3t-value"
        assert "s3cr3t" not in repr(config.state)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "toolcage.toml"
    path.write_text(text)
    return path


class TestBadValues:
    @pytest.mark.parametrize(
        ("text", "where"),
        [
            ("[state]\nenabled = \"maybe\"\n", r"state\.enabled: Input should be a valid boolean"),
            ("[state]\nvector_weight = -1\n", r"state\.vector_weight: Input should be greater"),
            ("[state]\nvector_weight = 0\nfts_weight = 0\n", r"state: vector_weight and fts_"),
            ("[state]\nchunk_chars = 10\n", r"state\.chunk_chars: Input should be greater"),
            ("[state]\nurl = \"ftp://x\"\n", r"state\.url: url 'ftp://x': unknown scheme"),
            ("[state]\nurl = \"libsql://\"\n", r"state\.url: .* names no host"),
            ("[state]\nauth_token = \"a\"\nauth_token_env = \"B\"\n", r"state: set auth_token or"),
            ("[state]\nauth_token_env = \"not a name\"\n", r"state\.auth_token_env: 'not a name'"),
            ("[state]\ncolour = 1\n", r"state\.colour: unknown key"),
            ("[state.embedder]\nkind = \"magic\"\n", r"state\.embedder\.kind: Input should be"),
            ("[state.embedder]\nkind = \"openai\"\nbase_url = \"http://h/v1\"\n",
             r"state\.embedder: kind 'openai' needs model"),
            ("[state.embedder]\nkind = \"openai\"\nmodel = \"m\"\n",
             r"state\.embedder: kind 'openai' needs base_url"),
            ("[state.embedder]\nkind = \"openai\"\nmodel = \"m\"\nbase_url = \"http://h\"\n",
             r"state\.embedder: kind 'openai' needs dimensions"),
            ("[state.embedder]\nkind = \"openai\"\nmodel = \"m\"\nbase_url = \"ftp://h\"\n",
             r"state\.embedder: base_url 'ftp://h' is not an http\(s\) URL"),
            ("[state.embedder]\nkind = \"hash\"\nmodel = \"m\"\n", r"state\.embedder: kind 'hash'"),
            ("[state.embedder]\nkind = \"hash\"\ndimensions = 0\n",
             r"state\.embedder\.dimensions: Input should be greater"),
            ("[state.embedder]\nbatch_size = 0\n", r"state\.embedder\.batch_size: Input should"),
            ("[state.vault]\nmax_bytes = 0\n", r"state\.vault\.max_bytes: Input should be greater"),
            ("[state.vault]\ngrants = { default = [\"../x\"] }\n",
             r"state\.vault\.grants: grants\.default: '\.\./x' is not an item name"),
        ],
    )  # fmt: skip
    def test_named_by_key(self, tmp_path: Path, text: str, where: str) -> None:
        path = _write(tmp_path, text)
        with pytest.raises(ConfigError, match=rf"^{path}: {where}"):
            load_config(path)
