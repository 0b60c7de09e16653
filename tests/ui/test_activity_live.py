"""The activity strip's counting, and the live watcher's one look at the journal per second."""

import asyncio
import threading
import time
from datetime import date

from claude_chats.ui import activity, live
from tests.support.journals import store_session

TODAY = date(2026, 12, 1)


def test_a_session_within_a_day_is_counted_on_that_day():
    out = activity.counts([{"project_path": "/p", "started_at": "2026-11-30T10:00:00Z",
                            "last_at": "2026-11-30T11:00:00Z", "message_count": 12}], TODAY)
    assert dict(out["/p"]) == {363: 12}


def test_a_session_over_days_is_shared_and_nothing_outside_the_year_counts():
    rows = [{"project_path": "/p", "started_at": "2026-11-28T23:00:00Z", "last_at": "2026-11-30T01:00:00Z",
             "message_count": 30},
            {"project_path": "/q", "started_at": "2024-01-01T00:00:00Z", "last_at": "2024-01-02T00:00:00Z",
             "message_count": 99},
            {"project_path": "/r", "started_at": None, "last_at": None, "message_count": 5}]
    out = activity.counts(rows, TODAY)
    assert sorted(out) == ["/p"]
    assert {k: round(v) for k, v in out["/p"].items()} == {361: 10, 362: 10, 363: 10}


def test_the_strip_escapes_project_names():
    svg = str(activity.draw({"/w/<script>alert(1)": {3: 4.0}}, today=TODAY))
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert svg.count("<rect") == 2   # the total row and the project's row, one day each


def test_one_look_per_second_whatever_the_number_of_listeners(tmp_path, empty_journal):
    store_session("s-a", ["hello"])
    watcher = live.Watcher(empty_journal.path, interval=0.5)

    async def listen(results):
        seen = None
        for _ in range(3):
            seen = await watcher.wait(seen, 5)
            results.append(seen)

    async def main():
        results = []
        watcher.listeners = 30
        tasks = [asyncio.create_task(listen(results)) for _ in range(30)]
        await asyncio.sleep(0.2)
        threading.Thread(target=store_session, args=("s-b", ["a new turn"])).start()
        await asyncio.sleep(1.6)
        watcher.listeners = 0
        for t in tasks:
            t.cancel()
        return results

    started = time.monotonic()
    results = asyncio.run(main())
    elapsed = time.monotonic() - started
    assert watcher.checks <= elapsed / 0.5 + 2, (watcher.checks, elapsed)
    first, later = min(results), max(results)
    assert later > first   # the new turn woke the listeners

