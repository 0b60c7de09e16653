"""Timestamps kept as integers in the journal (``messages.created_at``, ``raw_lines.created_at``; journal
migration 0016).

A message's and a kept line's time is what its transcript line says, almost always as Claude Code writes
it (JavaScript's ``toISOString``: ``2026-01-16T07:41:27.935Z``, 24 characters). As TEXT that took 25 bytes
in every message row and again in every kept line's; ``pack`` stores such a value as the milliseconds
since 1970-01-01 UTC (an INTEGER, 6 bytes), every other value (an offset, microseconds, no time at all,
anything a transcript may hold) stays as it came. ``unpack`` gives back the text, exactly: ``pack``
takes only a date that exists, with a year of four digits, and ``unpack`` writes it in the same shape.

Every journal connection has ``chats_time(value)`` (``register``, called by ``db.connect``): the text of a
stored time, for the statements that read one, and ``chats_pack_time(text)``: its stored form. Whoever
compares with the column compares stored forms (a time filter packs its bound: ``search.UTC_CREATED``) or
the texts (``julianday(chats_time(created_at))``): an INTEGER sorts before every TEXT in SQLite. A stored
integer this module could not have written (a journal changed by hand) is a ``JournalError``, never a time.

On the hook's path: integers only, nothing imported.
"""

DAY_MS = 86_400_000
SIZE = 24          # characters of the form packed


def pack(value):
    """The stored form of a time: milliseconds since the epoch for ``YYYY-MM-DDTHH:MM:SS.mmmZ`` naming a
    moment that exists, else ``value`` itself."""
    if type(value) is not str or len(value) != SIZE or value[23] != "Z" or value[19] != "." or value[10] != "T":
        return value
    if value[4] != "-" or value[7] != "-" or value[13] != ":" or value[16] != ":":
        return value
    digits = value[:4] + value[5:7] + value[8:10] + value[11:13] + value[14:16] + value[17:19] + value[20:23]
    if not (digits.isascii() and digits.isdigit()):   # (isdigit alone takes other scripts' digits)
        return value
    year, month, day = int(value[:4]), int(value[5:7]), int(value[8:10])
    hour, minute, second, milli = int(value[11:13]), int(value[14:16]), int(value[17:19]), int(value[20:23])
    if not (1 <= month <= 12 and 1 <= day <= _month_days(year, month) and hour < 24 and minute < 60
            and second < 60):   # (a leap second, 23:59:60, stays text)
        return value
    return _days(year, month, day) * DAY_MS + ((hour * 60 + minute) * 60 + second) * 1000 + milli


def unpack(value):
    """The text of a stored time (a TEXT or NULL as it is)."""
    if type(value) is not int:
        return value
    days, rest = divmod(value, DAY_MS)
    date = _DATES.get(days)
    if date is None:
        date = _date(days, value)
    hour, rest = divmod(rest, 3_600_000)
    minute, rest = divmod(rest, 60_000)
    second, milli = divmod(rest, 1000)
    return f"{date}{hour:02d}:{minute:02d}:{second:02d}.{milli:03d}Z"


_DATES = {}   # days -> "YYYY-MM-DDT": the rows a reader reads fall on few days (2.3 -> 1.4 us a time)


def _date(days, value):
    year, month, day = _civil(days)
    if not 0 <= year <= 9999:
        raise _damaged(value)
    if len(_DATES) >= 4096:
        _DATES.clear()
    date = _DATES[days] = f"{year:04d}-{month:02d}-{day:02d}T"
    return date


def register(conn):
    """``chats_time(value)`` and ``chats_pack_time(text)`` on ``conn``."""
    conn.create_scalar_function("chats_time", unpack, 1, deterministic=True)
    conn.create_scalar_function("chats_pack_time", pack, 1, deterministic=True)


def _month_days(year, month):
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


# Days from and to the civil (proleptic Gregorian) calendar, after Howard Hinnant's algorithms
# (https://howardhinnant.github.io/date_algorithms.html): exact for every year, no ``datetime`` to import.

def _days(year, month, day):
    """Days since 1970-01-01 of a date."""
    year -= month <= 2
    era = year // 400
    of_era = year - era * 400
    of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    return era * 146097 + of_era * 365 + of_era // 4 - of_era // 100 + of_year - 719468


def _civil(days):
    """(year, month, day) of days since 1970-01-01."""
    days += 719468
    era = days // 146097
    of_era = days - era * 146097
    year_of_era = (of_era - of_era // 1460 + of_era // 36524 - of_era // 146096) // 365
    of_year = of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted = (5 * of_year + 2) // 153
    day = of_year - (153 * shifted + 2) // 5 + 1
    month = shifted + (3 if shifted < 10 else -9)
    return year_of_era + era * 400 + (month <= 2), month, day


def _damaged(value):
    from ..errors import JournalError   # here: errors is off the hook's path

    return JournalError(f"a time stored in the journal is out of range ({value}): it was not written by "
                        "claude-chats (a journal changed by hand?)")
