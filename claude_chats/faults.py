"""Fault injection for the crash tests: die (SIGKILL) at a named point of a sync.

``CLAUDE_CHATS_SYNC_DIE_AT=<point>[@<n>]`` makes the process kill itself
with SIGKILL the n-th time (default: first) it reaches ``point``, exactly
like ``kill -9`` from outside, so tests can prove that a crash anywhere loses
and duplicates nothing. The points: ``after-embed``, ``after-conversations``
(the conversations committed, the messages not yet), ``mid-copy-<temporary
table>`` (during a binary COPY), ``before-mark`` (Postgres committed, the
journal not yet marked; for a backfill, its vectors not yet kept locally); and of ``chats redact
--postgres``: ``mid-rewrite`` (a batch's rows updated, not committed) and ``after-rewrite``
(committed, the next batch and the scrub not run); of the journal's vector index (``localstore.ivf``):
``mid-retrain`` (a batch copied into the shadow lists, not swapped in), ``before-drop-old`` (swapped in, the
lists replaced not dropped yet: ``ivf.drop_old``), ``mid-fold`` (a list rewritten, the others not) and
``mid-separate`` (a list's fine codes moved apart, the others not: ``ivf.separate``); of the
journal's free pages given back (``db.reclaim``): ``mid-reclaim`` (a step's pages moved, not committed); of
a heavy journal migration (``db.migrate``): ``mid-migration`` (its tables written again, not committed)
and ``before-drop`` (committed, the old table not dropped yet: ``db.drop_leftovers``).
Unset (always, outside tests) this costs one dict lookup.
"""

import os

ENV = "CLAUDE_CHATS_SYNC_DIE_AT"
_reached = {}


def point(name):
    wanted = os.environ.get(ENV)
    if not wanted or not wanted.startswith(name):
        return
    target, _, nth = wanted.partition("@")
    if target != name:
        return
    _reached[name] = _reached.get(name, 0) + 1
    if _reached[name] == int(nth or 1):
        import signal   # here: `signal` imports `enum`, 2-3 ms the hook (which reaches ftsparts) would pay

        os.kill(os.getpid(), signal.SIGKILL)
