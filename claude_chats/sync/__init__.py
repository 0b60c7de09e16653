"""``chats sync``: the journal's pending messages -> chunks -> vectors -> Postgres.

Public API (import the module you need; this package imports nothing, so the
hook's ``background`` stays cheap):

- ``runner.run_sync(settings=None, journal=None, provider=None, store=None, ...)``
  -> ``engine.SyncReport``: one sync under the lock (``SyncLocked`` otherwise).
- ``engine.Syncer``: one run over an open journal, provider and store.
- ``background.maybe_start(conn=None, interval=None)``: the hook's detached start.
- ``lock.SyncLock``; ``pusher.Pusher`` (batches pushed on several connections);
  ``schedule.get(name=None)``: cron / systemd user timer / launchd.

The stores it moves between are ``claude_chats.localstore`` and ``claude_chats.pgstore``.
"""
