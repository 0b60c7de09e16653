"""The canonical store: PostgreSQL + pgvector, which every machine's journal syncs into.

``connect``: a safe connection (TLS check, short timeout, pgvector adapter);
``url``: database URLs parsed, checked and masked; ``migrations``: the numbered
``sql/`` files, each applied once; ``store``: ``PgStore``, the push side;
``search``: ``PgSearch`` and ``PgLink``, the read side; ``purge``: deletes and
tombstones. Imports neither the journal nor sync (``claude_chats.stores`` is the
one place that knows both stores).
"""
