"""Messages per day over the last year, per project, as a small SVG drawn on the server.

Counted from the sessions' rows (first and last message time, message count), not from the messages:
at a million messages a pass over them would cost seconds, the sessions are a few thousand rows. A
session's messages are spread evenly over the days from its first to its last message, so a session
within one day (most of them) is counted exactly, and a session that spans days is shared among them.
The SVG is inline in the sessions page; every label is escaped, and nothing in it runs.
"""

import math
import os
from collections import defaultdict
from datetime import date, datetime, timedelta, timezone

from markupsafe import Markup, escape

DAYS = 365
ROWS = 8            # projects drawn, the busiest of the year; the rest share one row
SESSIONS = 20_000   # the most recent sessions read (more than a year of a heavy user's)
CELL, GAP, LABEL = 3, 1, 150


def counts(rows, today=None, days=DAYS):
    """{project: {day index 0..days-1 (0: ``days`` - 1 days ago): messages}} of session ``rows``."""
    today = today or datetime.now(timezone.utc).date()
    first_day = today - timedelta(days=days - 1)
    out = defaultdict(lambda: defaultdict(float))
    for row in rows:
        start, end = _day(row.get("started_at")), _day(row.get("last_at"))
        start, end = start or end, end or start
        count = int(row.get("message_count") or 0)
        if start is None or count <= 0 or end < first_day:
            continue
        if end < start:
            start, end = end, start
        span = (end - start).days + 1
        share = count / span
        for offset in range(max(0, (first_day - start).days), span):
            day = start + timedelta(days=offset)
            if day > today:
                break
            out[row.get("project_path") or ""][(day - first_day).days] += share
    return out


def svg(searcher, project=None, origin="human", today=None):
    """The strip for the configured store (``Searcher.session_rows``), as inline SVG markup."""
    rows = searcher.session_rows(SESSIONS, project, origin)
    by_project = counts(rows, today)
    clean = _cleaner(searcher)
    return draw(by_project, clean, today)


def draw(by_project, clean=None, today=None, days=DAYS):
    """SVG of ``counts``' result: one row per busy project, a total row on top."""
    today = today or datetime.now(timezone.utc).date()
    totals = sorted(by_project.items(), key=lambda item: -sum(item[1].values()))
    rows = [("all projects", _sum(by_project.values(), days))]
    rows += [(_label(p, clean), [d.get(i, 0.0) for i in range(days)]) for p, d in totals[:ROWS]]
    if len(totals) > ROWS:
        rows.append((f"{len(totals) - ROWS} other projects", _sum([d for _, d in totals[ROWS:]], days)))
    width, height = LABEL + days * CELL, (CELL * 4 + GAP) * len(rows) + 14
    peak = max((max(values) for _, values in rows), default=0) or 1
    first_day = today - timedelta(days=days - 1)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="activity" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="messages per day over the last year">']
    for index, (label, values) in enumerate(rows):
        y = index * (CELL * 4 + GAP)
        total = sum(values)
        parts.append(f'<text x="0" y="{y + CELL * 3}" class="activity-label">{escape(label)} '
                     f'({round(total):,})</text>')
        for day, value in enumerate(values):
            if value <= 0:
                continue
            level = 0.25 + 0.75 * math.log1p(value) / math.log1p(peak)
            when = (first_day + timedelta(days=day)).isoformat()
            parts.append(f'<rect x="{LABEL + day * CELL}" y="{y}" width="{CELL - 1}" height="{CELL * 4}" '
                         f'fill-opacity="{level:.2f}"><title>{when}: {round(value):,} messages</title></rect>')
    axis_y = len(rows) * (CELL * 4 + GAP) + 10
    for month in range(0, days, 61):
        parts.append(f'<text x="{LABEL + month * CELL}" y="{axis_y}" class="activity-axis">'
                     f'{(first_day + timedelta(days=month)).strftime("%b %Y")}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def _sum(series, days):
    total = [0.0] * days
    for values in series:
        for day, value in values.items():
            total[day] += value
    return total


def _label(project, clean=None):
    """A project's row label: its folder's name (redacted as the pages are)."""
    text = project or "(no project)"
    if clean is not None:
        text = clean(text)
    tail = os.path.basename(text.rstrip("/")) or text
    return tail if len(tail) <= 40 else tail[:39] + "…"


def _cleaner(searcher):
    if getattr(searcher, "redact_results", False):
        from ..redact import redact

        return redact
    return None


def _day(value):
    if not value:
        return None
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).date() if value.tzinfo else value.date()
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value)[:10])
    except ValueError:
        return None
