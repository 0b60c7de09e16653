"""The local journal: one SQLite file (apsw, WAL, FTS5, sqlite-vec) that the hook writes every turn.

``db``: opening and migrating the file; ``writer``: the hook's write path
(transcript bytes after the saved cursor -> rows); ``journal``: ``Journal``,
reading and bulk import; ``fts``: typed text as a safe FTS5 query; ``search``:
``LocalSearch``, the searcher's offline backend; ``vectors``: embedding spaces
in sqlite-vec; ``outbox``: what sync reads from and writes back to the journal;
``erase``: purging and rewriting without leaving a byte behind. Imports neither
Postgres nor sync nor the configuration.
"""
