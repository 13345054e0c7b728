"""The embedded store under several writers: threads, processes, and a process killed
while it saves."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import apsw
import sqlite_vec
from toolcage.host_bindings._store import HashingEmbedder, open_store

from .conftest import keyword_index_problems, principal

SAVER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from toolcage.host_bindings._store import HashingEmbedder, open_store
    from toolcage.policies import Principal

    base, prefix, count, chunks = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    embedder = HashingEmbedder(384)
    store = open_store("sqlite:state.db", base_dir=base)
    print("ready", flush=True)
    sys.stdin.readline()  # both writers start together
    n = 0
    while count < 0 or n < count:
        texts = [f"{prefix} note {n} part {i} shared words" for i in range(chunks)]
        store.save_note(Principal("user"), f"note-{prefix}-{n}", texts,
                        embedder.embed(texts, time.monotonic() + 60), [prefix], embedder.model)
        n += 1
        print(n, flush=True)
    store.close()
    """
)


def saver(base: Path, prefix: str, count: int, chunks: int = 1) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", SAVER, str(base), prefix, str(count), str(chunks)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def start(*processes: subprocess.Popen[str]) -> None:
    """Wait until every saver has opened the store, then let them all go."""
    for process in processes:
        assert process.stdout is not None
        assert process.stdout.readline() == "ready\n"
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()


def count_notes(path: Path) -> int:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    conn.set_busy_timeout(30_000)
    try:
        return int(conn.execute("SELECT count(*) FROM notes").fetchone()[0])  # type: ignore[index]
    finally:
        conn.close()


def assert_consistent(path: Path) -> None:
    """Every table agrees with every other: no note without its chunks, no orphans."""
    conn = apsw.Connection(str(path))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]

        def one(sql: str) -> int:
            return int(conn.execute(sql).fetchone()[0])  # type: ignore[index]

        chunks = one("SELECT count(*) FROM chunks")
        assert (
            one("SELECT count(*) FROM notes WHERE id NOT IN (SELECT note_rowid FROM chunks)") == 0
        )
        assert (
            one("SELECT count(*) FROM chunks WHERE note_rowid NOT IN (SELECT id FROM notes)") == 0
        )
        assert one("SELECT count(*) FROM chunk_vectors") == chunks
        assert one("SELECT count(*) FROM chunk_bits") == chunks
        assert one("SELECT count(*) FROM chunk_owner_vec") == chunks
        assert one("SELECT count(*) FROM chunk_tag_vec") == one("SELECT count(*) FROM chunk_tags")
        assert (
            one("SELECT count(*) FROM chunk_tags WHERE chunk_id NOT IN (SELECT id FROM chunks)")
            == 0
        )
        assert keyword_index_problems(lambda sql: list(conn.execute(sql))) == []
        notes_indexed = "SELECT count(DISTINCT doc) FROM keyword_postings AS p JOIN keyword_corpora"
        assert one(f"{notes_indexed} AS k ON k.id = p.corpus WHERE k.kind = 'notes'") == chunks
    finally:
        conn.close()


class TestIndexesStayInStep:
    def test_replacing_and_deleting_tagged_notes_leaves_no_orphans(self, tmp_path: Path) -> None:
        embedder = HashingEmbedder(384)
        store = open_store("sqlite:state.db", base_dir=tmp_path)

        def vectors(*texts: str) -> list[list[float]]:
            return embedder.embed(list(texts), 0)

        store.save_note(
            principal("u"),
            "note-1",
            ["a b", "c d"],
            vectors("a b", "c d"),
            ["x", "y"],
            embedder.model,
        )
        store.save_note(principal("u"), "note-2", ["e f"], vectors("e f"), ["x"], embedder.model)
        store.replace_note(principal("u"), "note-1", ["g h"], vectors("g h"), ["z"], embedder.model)
        [hit] = store.search_notes(
            "u", "", embedder.embed_one("g h"), top_k=5, tags=["z"], model=embedder.model
        )
        assert hit.note_id == "note-1"
        assert (
            store.search_notes(
                "u", "", embedder.embed_one("a b"), top_k=5, tags=["y"], model=embedder.model
            )
            == []
        )
        store.delete_note("u", "note-2")
        assert (
            store.search_notes(
                "u", "", embedder.embed_one("e f"), top_k=5, tags=["x"], model=embedder.model
            )
            == []
        )
        store.close()
        assert_consistent(tmp_path / "state.db")


class TestConcurrentWriters:
    def test_threads_sharing_one_store_lose_nothing(self, tmp_path: Path) -> None:
        embedder = HashingEmbedder(384)
        store = open_store("sqlite:state.db", base_dir=tmp_path)

        def work(prefix: str) -> None:
            for n in range(25):
                text = f"{prefix} thread note {n}"
                store.save_note(
                    principal("user"),
                    f"note-{prefix}-{n}",
                    [text],
                    embedder.embed([text], 0),
                    [],
                    embedder.model,
                )
                store.search_notes(
                    "user", text, embedder.embed_one(text), top_k=3, model=embedder.model
                )

        threads = [threading.Thread(target=work, args=(f"t{i}",)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        store.close()
        assert count_notes(tmp_path / "state.db") == 100
        assert_consistent(tmp_path / "state.db")

    def test_two_processes_saving_at_once_lose_nothing(self, tmp_path: Path) -> None:
        open_store("sqlite:state.db", base_dir=tmp_path).close()
        first, second = saver(tmp_path, "a", 150), saver(tmp_path, "b", 150)
        start(first, second)
        first.communicate()
        second.communicate()
        assert (first.returncode, second.returncode) == (0, 0)
        assert count_notes(tmp_path / "state.db") == 300
        assert_consistent(tmp_path / "state.db")
        store = open_store("sqlite:state.db", base_dir=tmp_path)
        embedder = HashingEmbedder(384)
        for prefix in ("a", "b"):
            hits = store.search_notes(
                "user", f"{prefix} note 149", None, top_k=1, tags=[prefix], model=embedder.model
            )
            assert hits[0].note_id == f"note-{prefix}-149"
        store.close()

    def test_a_new_store_opens_while_another_connection_writes_it(self, tmp_path: Path) -> None:
        # Switching a new file into WAL while another connection is writing it fails at
        # once, without SQLite's busy handler, as two processes opening a new store at once
        # do: the open tries again until the lock is free.
        path = tmp_path / "state.db"
        writer = apsw.Connection(str(path))
        writer.execute("CREATE TABLE held (n)")
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("INSERT INTO held VALUES (1)")
        opened: list[object] = []
        opener = threading.Thread(
            target=lambda: opened.append(open_store("sqlite:state.db", base_dir=tmp_path))
        )
        opener.start()
        opener.join(0.5)
        writer.execute("COMMIT")
        writer.close()
        opener.join()
        assert len(opened) == 1
        opened[0].close()  # type: ignore[attr-defined]


class TestKilledWriter:
    def test_sigkill_while_saving_leaves_a_consistent_database(self, tmp_path: Path) -> None:
        open_store("sqlite:state.db", base_dir=tmp_path).close()
        # Notes of 40 chunks: most of the saver's time is inside a save's transaction.
        process = saver(tmp_path, "k", -1, chunks=40)
        start(process)
        assert process.stdout is not None
        while int(process.stdout.readline() or "0") < 5:  # saved at least five notes
            assert process.poll() is None
        os.kill(process.pid, signal.SIGKILL)
        process.communicate()
        assert count_notes(tmp_path / "state.db") >= 5
        assert_consistent(tmp_path / "state.db")
        store = open_store("sqlite:state.db", base_dir=tmp_path)
        embedder = HashingEmbedder(384)
        store.save_note(
            principal("user"),
            "note-after",
            ["after the kill"],
            embedder.embed(["after the kill"], 0),
            [],
            embedder.model,
        )
        [hit] = store.search_notes("user", "kill", None, top_k=1)
        assert hit.note_id == "note-after"
        store.close()
        assert_consistent(tmp_path / "state.db")
