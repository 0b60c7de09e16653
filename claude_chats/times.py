"""Timestamps as the journal and the transcripts write them: ``2025-01-31T14:00:00.000Z``.

Stdlib ``time`` only at import: the hook stamps every write with ``now_iso``.
"""

import time


def now_iso():
    """UTC now, ISO-8601 with milliseconds (a rename and a push in the same second stay ordered)."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"


def iso(moment):
    """A datetime as ``YYYY-MM-DDTHH:MM:SS.mmmZ``; a string or None as it is."""
    if moment is None or isinstance(moment, str):
        return moment
    from datetime import timezone

    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
