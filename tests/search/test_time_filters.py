"""``--since`` / ``--until`` mean instants, in the journal as in Postgres (issue 16, item 11).

Transcript timestamps carry their own offset (``12:00+05:00`` is ``07:00Z``). Each
search runs through ``chats search --json``, once against Postgres and once with
``--local`` (the journal); both stores must return the same messages, and the
right ones.
"""

import json

import pytest
from click.testing import CliRunner

from claude_chats import models
from claude_chats.cli import main
from tests.support.fakes import HashEmbedder

# (uuid, timestamp as the transcript writes it, the instant in UTC)
MESSAGES = [
    ("m-0500", "2026-01-01T12:00:00.000+05:00", "07:00"),
    ("m-zulu", "2026-01-01T09:00:00.000Z", "09:00"),
    ("m-west", "2026-01-01T06:30:00.000-04:00", "10:30"),
    ("m-late", "2026-01-01T11:15:00.250Z", "11:15"),
    ("m-nofrac", "2026-01-01T13:00:00+02:00", "11:00"),
]


def chats(*args):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def both_stores(tmp_path, pg_db_url, monkeypatch):
    monkeypatch.setitem(models.PROVIDERS, HashEmbedder.name, HashEmbedder)
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", HashEmbedder.name)
    monkeypatch.setenv("DATABASE_URL", pg_db_url)
    rows = [{"type": "user", "uuid": uuid, "sessionId": f"s-{uuid}", "cwd": "/work/proj", "timestamp": ts,
             "message": {"role": "user", "content": f"deploy the reactor ({uuid})"}} for uuid, ts, _utc in MESSAGES]
    path = tmp_path / "times.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    chats("import", str(path))
    summary = json.loads(chats("sync", "--json"))
    assert summary["pushed"] == len(MESSAGES)


def found(*args):
    """{store: set of uuids} of a full-text search for the messages, in Postgres and in the journal."""
    out = {}
    for store, extra in (("postgres", []), ("local", ["--local"])):
        result = json.loads(chats("search", "reactor", "--mode", "fulltext", "-n", "50", "--per-session", "0",
                                  "--json", *extra, *args))
        assert {hit["source"] for hit in result["hits"]} <= {store}, result["notes"]
        out[store] = {hit["text"].split("(")[1].rstrip(")") for hit in result["hits"]}
    return out


def expected(since=None, until=None):
    return {u for u, _ts, utc in MESSAGES if (since is None or utc >= since) and (until is None or utc < until)}


@pytest.mark.parametrize("since, until", [
    ("10:00", None), (None, "08:00"), ("07:00", "09:00"), ("09:00", "11:00"), ("10:30", "11:15"),
    ("11:00", "11:16"), ("06:59", "07:01"),
])
def test_both_stores_filter_by_the_instant_not_the_text(both_stores, since, until):
    args = []
    if since:
        args += ["--since", f"2026-01-01T{since}:00Z"]
    if until:
        args += ["--until", f"2026-01-01T{until}:00Z"]
    stores = found(*args)
    assert stores["postgres"] == expected(since, until)
    assert stores["local"] == stores["postgres"]


def test_bounds_with_an_offset_of_their_own(both_stores):
    stores = found("--since", "2026-01-01T12:00:00+02:00", "--until", "2026-01-01T06:15:00-05:00")
    assert stores["postgres"] == expected("10:00", "11:15") == stores["local"]
