"""What the state store and the schedule store share: one base per kind of backend.

* :class:`~._embedded.EmbeddedBackend` -- one SQLite file, its connection pool
  (:mod:`._sqlite_pool`) and the causes of its failures (:mod:`._sqlite_causes`);
* :class:`~._remote.RemoteBackend` -- a libSQL server through a bounded client
  (:mod:`._libsql_client`), with one translation of its errors;
* :mod:`._migrations` -- one versioned migration of a store's tables, for both;
* :mod:`._urls` -- where ``[state] url`` points; :mod:`._errors` -- what they raise;
  :mod:`._waits` -- every wait bounded by the running call's deadline.

``_store`` and ``_scheduler`` import this package and never each other; it imports
neither. Nothing is imported eagerly here: the embedded backend loads apsw and
sqlite-vec, the remote one libsql-client (an optional extra).
"""
