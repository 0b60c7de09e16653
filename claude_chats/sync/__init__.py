"""``chats sync``: the journal's pending messages -> chunks -> vectors -> Postgres.

Public API (import the module you need; this package imports nothing, so the
hook's ``background`` stays cheap):

- ``runner.run_sync(settings=None, journal=None, provider=None, store=None, ...)``
  -> ``engine.SyncReport``: one sync under the lock (``SyncLocked`` otherwise).
- ``background.maybe_start(conn=None, interval=None)``: the hook's detached start.
- ``store.PgStore.open(url)``: the canonical store (push, counts, spaces,
  ``vector_table``/``index_expression`` for readers); ``pg.connect``; ``dburl.mask``.
- ``migrations.migrate(conn)``: the numbered ``sql/`` files, each applied once.
- ``schedule.get(name=None)``: cron / systemd user timer / launchd.
"""
