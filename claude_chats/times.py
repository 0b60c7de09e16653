"""Timestamps as the journal and the transcripts write them: ``2025-01-31T14:00:00.000Z``.

Stdlib ``time`` only at import: the hook stamps every write with ``now_iso``.
"""

import time


def now_iso():
    """UTC now, ISO-8601 with milliseconds (a rename and a push in the same second stay ordered)."""
    return iso_at(time.time())


def iso_at(seconds):
    """A time (seconds since the epoch) as ``YYYY-MM-DDTHH:MM:SS.mmmZ``: such strings compare as times."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{int(seconds * 1000) % 1000:03d}Z"


def iso(moment):
    """A datetime as ``YYYY-MM-DDTHH:MM:SS.mmmZ``; a string or None as it is."""
    if moment is None or isinstance(moment, str):
        return moment
    from datetime import timezone

    # isoformat, not strftime: strftime("%Y") writes the year 1 as "1", which sorts after "2026"
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- durations ----------------------------------------------------------------------------
# Here, on the ground floor, because the hook reads ``CLAUDE_CHATS_SYNC_INTERVAL`` on its own
# path (``sync.background``) and the config module parses the same settings: one parser.

DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
DURATION_OFF = ("off", "never", "no", "false")
MAX_DURATION = 366 * 86400     # beyond a year a duration is a typo (and a timeout would overflow)
DURATION_FORMS = "300, 5m, 1.5h, 1d, off"


def seconds(value):
    """Whole seconds from ``300``, ``"300"``, ``"5m"``, ``"1.5h"``, ``"1d"`` or ``"off"`` (0).

    ``ValueError`` saying why for anything else: words, a negative, infinite or
    not-a-number value, more than a year, or less than a second that is not 0
    (it would round to 0, which turns the setting off).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"not a duration ({DURATION_FORMS})")
    if isinstance(value, (int, float)):
        number = value
    else:
        text = value.strip().lower()
        if text in DURATION_OFF:
            return 0
        unit = DURATION_UNITS.get(text[-1:])
        try:
            number = float(text[:-1] if unit else text) * (unit or 1)
        except ValueError:
            raise ValueError(f"not a duration ({DURATION_FORMS})") from None
    if number != number or abs(number) == float("inf"):
        raise ValueError("not a finite duration")
    if number < 0:
        raise ValueError("a negative duration")
    if number > MAX_DURATION:
        raise ValueError(f"more than a year ({MAX_DURATION} s); off turns it off")
    if 0 < number < 1:
        raise ValueError("less than a second, which would round to 0 (off); write 0 or off to turn it off")
    return int(number)


def spoken(seconds):
    """A duration for people: ``45 s``, ``3 min 20 s``, ``2 h 05 min``."""
    seconds = int(round(max(0, seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
