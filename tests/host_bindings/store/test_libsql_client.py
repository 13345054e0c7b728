"""The private parts of libsql-client that the remote store relies on are still there."""

from __future__ import annotations

from importlib.metadata import version

import libsql_client


class TestPinnedClient:
    def test_the_sync_client_keeps_its_executor_and_async_client(self) -> None:
        assert version("libsql-client") == "0.3.1"
        client = libsql_client.create_client_sync("http://127.0.0.1:9")  # never connected
        try:
            assert hasattr(client._executor, "submit_coro")
            assert isinstance(client._client, libsql_client.Client)
        finally:
            client.close()
