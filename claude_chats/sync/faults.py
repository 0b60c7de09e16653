"""Fault injection for the crash tests: die (SIGKILL) at a named point of a sync.

``CLAUDE_CHATS_SYNC_DIE_AT=<point>`` makes the process kill itself with
SIGKILL when it reaches ``point``, exactly like ``kill -9`` from outside,
so tests can prove that a crash anywhere loses and duplicates nothing. The
points: ``after-embed``, ``mid-copy-push_messages``, ``mid-copy-push_chunks``,
``before-mark``. Unset (always, outside tests) this costs one dict lookup.
"""

import os
import signal

ENV = "CLAUDE_CHATS_SYNC_DIE_AT"


def point(name):
    if os.environ.get(ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
