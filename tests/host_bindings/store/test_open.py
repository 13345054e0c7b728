"""Opening a store by URL: where the file goes, and a clear error naming the URL."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest
from toolcage.host_bindings._store import (
    EmbeddingModelMismatch,
    HashingEmbedder,
    StoreError,
    StoreUnavailable,
    open_store,
)

from .conftest import TOKEN, principal
from .libsql_server import LibsqlServer


class TestEmbeddedUrls:
    def test_a_relative_path_is_under_the_base_dir(self, tmp_path: Path) -> None:
        store = open_store("sqlite:.toolcage/state.db", base_dir=tmp_path)
        store.close()
        assert store.url == "sqlite:.toolcage/state.db"
        assert (tmp_path / ".toolcage/state.db").is_file()

    def test_the_database_and_its_wal_are_readable_by_their_owner_only(
        self, tmp_path: Path
    ) -> None:
        store = open_store("sqlite:state.db", base_dir=tmp_path)
        store.save_note(principal("alice"), "note-1", ["a private note"], None, [], None)
        modes = {p.name: p.stat().st_mode & 0o777 for p in tmp_path.glob("state.db*")}
        store.close()
        assert "state.db-wal" in modes
        assert set(modes.values()) == {0o600}, modes

    def test_an_absolute_path_is_used_as_is(self, tmp_path: Path) -> None:
        path = tmp_path / "elsewhere" / "db.sqlite"
        store = open_store(f"sqlite://{path}", base_dir=tmp_path / "unused")
        store.close()
        assert path.is_file()

    @pytest.mark.parametrize(
        "url",
        [
            "sqlite://host/state.db",  # a host means nothing to a file
            "sqlite:",
            "sqlite:state.db?mode=ro",
            "postgres://127.0.0.1/db",
            "state.db",
        ],
    )
    def test_a_malformed_url_is_refused_by_name(self, tmp_path: Path, url: str) -> None:
        with pytest.raises(StoreUnavailable, match="cannot be opened") as caught:
            open_store(url, base_dir=tmp_path)
        assert caught.value.url == url

    def test_a_directory_is_not_a_database(self, tmp_path: Path) -> None:
        (tmp_path / "dir.db").mkdir()
        with pytest.raises(StoreUnavailable, match=r"'sqlite:dir\.db' cannot be opened"):
            open_store("sqlite:dir.db", base_dir=tmp_path)

    def test_a_file_that_is_not_a_database_is_refused(self, tmp_path: Path) -> None:
        (tmp_path / "junk.db").write_bytes(b"not a database, just text " * 200)
        with pytest.raises(StoreUnavailable, match=r"junk\.db"):
            open_store("sqlite:junk.db", base_dir=tmp_path)

    def test_a_newer_schema_is_refused(self, tmp_path: Path) -> None:
        open_store("sqlite:s.db", base_dir=tmp_path).close()
        conn = apsw.Connection(str(tmp_path / "s.db"))
        conn.execute("UPDATE store_meta SET value = '999' WHERE key = 'schema_version'")
        conn.close()
        with pytest.raises(StoreUnavailable, match="schema version 999"):
            open_store("sqlite:s.db", base_dir=tmp_path)

    def test_stored_vectors_of_other_dimensions_are_refused_at_open(self, tmp_path: Path) -> None:
        embedder = HashingEmbedder(8)
        store = open_store("sqlite:s.db", base_dir=tmp_path, dimensions=8)
        store.save_note(
            principal("u"), "note-1", ["x"], embedder.embed(["x"], 0), [], embedder.model
        )
        store.close()
        with pytest.raises(StoreUnavailable, match="8 dimensions"):
            open_store("sqlite:s.db", base_dir=tmp_path, dimensions=384)
        open_store("sqlite:s.db", base_dir=tmp_path, dimensions=8).close()


class TestRemoteUrls:
    def test_the_token_may_come_in_the_url_and_is_never_shown(self, tmp_path: Path) -> None:
        with LibsqlServer(tmp_path / "r.db", token=TOKEN) as server:
            store = open_store(f"{server.url}?authToken={TOKEN}", base_dir=tmp_path)
            assert store.url == server.url
            assert TOKEN not in store.url
            store.close()

    def test_a_wrong_token_is_refused_by_name(self, tmp_path: Path) -> None:
        with LibsqlServer(tmp_path / "r.db", token=TOKEN) as server:
            with pytest.raises(StoreUnavailable, match="Unauthorized") as caught:
                open_store(server.url, base_dir=tmp_path, auth_token="wrong")  # noqa: S106
            assert caught.value.url == server.url

    def test_an_unreachable_server_is_refused_by_name(self, tmp_path: Path) -> None:
        server = LibsqlServer(tmp_path / "r.db")
        server.close()  # the port is now closed
        with pytest.raises(StoreUnavailable, match=r"127\.0\.0\.1") as caught:
            open_store(server.url, base_dir=tmp_path)
        assert caught.value.url == server.url

    @pytest.mark.parametrize(
        "url",
        ["libsql://", "http://127.0.0.1:1/?foo=1", "https://127.0.0.1:1/?tls=0"],
    )
    def test_a_malformed_remote_url_is_refused(self, tmp_path: Path, url: str) -> None:
        with pytest.raises(StoreUnavailable):
            open_store(url, base_dir=tmp_path)

    def test_libsql_urls_speak_http_with_tls_0(self, tmp_path: Path) -> None:
        with LibsqlServer(tmp_path / "r.db") as server:
            port = server.url.rsplit(":", 1)[1]
            store = open_store(f"libsql://127.0.0.1:{port}?tls=0", base_dir=tmp_path)
            assert store.url == f"libsql://127.0.0.1:{port}"
            assert store.write_pad(principal("u", "s"), ["x"]).items == ("x",)
            store.close()


class TestMigrations:
    def test_a_database_of_an_older_schema_is_migrated_in_place(self, tmp_path: Path) -> None:
        from toolcage.host_bindings._store import _schema

        conn = apsw.Connection(str(tmp_path / "old.db"))
        conn.execute(_schema.META_TABLE)
        for statement in _schema.MIGRATIONS[0]:
            assert isinstance(statement, str)
            conn.execute(statement)
        conn.execute("INSERT INTO store_meta VALUES ('schema_version', '1')")
        conn.execute("INSERT INTO pads VALUES ('u', 's', '[\"kept\"]', '2026-01-01T00:00:00.000Z')")
        conn.close()
        store = open_store("sqlite:old.db", base_dir=tmp_path)
        assert store.read_pad("u", "s").items == ("kept",)  # type: ignore[union-attr]
        store.save_note(principal("u"), "note-1", ["tea with lemon"], None, [], None)
        assert [hit.note_id for hit in store.search_notes("u", "lemon", None, top_k=1)] == [
            "note-1"
        ]
        store.close()
        conn = apsw.Connection(str(tmp_path / "old.db"))
        version = conn.execute("SELECT value FROM store_meta WHERE key = 'schema_version'")
        assert version.fetchall() == [(str(len(_schema.MIGRATIONS)),)]
        conn.close()


class TestSharedServer:
    def test_two_hosts_on_one_server_see_each_others_writes(self, tmp_path: Path) -> None:
        with LibsqlServer(tmp_path / "r.db", token=TOKEN) as server:
            first = open_store(server.url, base_dir=tmp_path, auth_token=TOKEN)
            second = open_store(server.url, base_dir=tmp_path, auth_token=TOKEN)
            first.save_note(
                principal("u"), "note-1", ["written by the first host"], None, ["a"], None
            )
            [hit] = second.search_notes("u", "first host", None, top_k=3, tags=["a"])
            assert hit.note_id == "note-1"
            assert second.delete_note("u", "note-1") is True
            assert first.search_notes("u", "first host", None, top_k=3) == []
            first.close()
            second.close()


class TestStalledServer:
    def test_a_server_that_stops_answering_is_given_up(self, tmp_path: Path) -> None:
        with LibsqlServer(tmp_path / "r.db") as server:
            store = open_store(server.url, base_dir=tmp_path, timeout=0.5)
            server.stalled = True
            with pytest.raises(StoreError, match=r"did not answer within 0\.5 s"):
                store.read_pad("u", "s")
            store.close()


class TestModelGuard:
    def test_a_host_saving_after_another_changed_the_model_is_refused(self, tmp_path: Path) -> None:
        old, new = HashingEmbedder(16), HashingEmbedder(16, synonyms={"a": "b"})
        with LibsqlServer(tmp_path / "r.db") as server:
            first = open_store(server.url, base_dir=tmp_path)
            second = open_store(server.url, base_dir=tmp_path)
            first.save_note(principal("u"), "note-1", ["x"], old.embed(["x"], 0), [], old.model)
            assert second.drop_vectors() == 1
            first.save_note(
                principal("u"), "note-2", ["y"], old.embed(["y"], 0), [], old.model
            )  # reclaims
            assert second.drop_vectors() == 1
            second.save_note(principal("u"), "note-3", ["z"], new.embed(["z"], 0), [], new.model)
            with pytest.raises(EmbeddingModelMismatch, match=new.model):
                first.save_note(principal("u"), "note-4", ["w"], old.embed(["w"], 0), [], old.model)
            assert first.search_notes("u", "w", None, top_k=5) == []  # nothing of it was saved
            assert first.replace_note(principal("u"), "note-1", ["v"], None, [], None) is not None
            first.close()
            second.close()
