"""A secret in a project folder or a git branch does not reach Postgres (issue 16, item 3).

Sync redacts the session's name, project path and branch like message text;
a search filtered by the project as typed (with the secret) still finds it in
Postgres; ``chats purge --project`` with the path as typed removes it there,
its tombstone holds the redacted path, and another machine's sync applies that
tombstone to its own journal (its copy of the folder, unredacted) and pushes
nothing back.
"""

import json

import psycopg

from tests.support.stand_ins import chats, line, write

TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
CWD = f"/work/checkouts/{TOKEN}/service"
BRANCH = f"hotfix/{TOKEN}"
SESSION = "sess-token-path"


def history(folder):
    rows = [line("user" if i % 2 == 0 else "assistant", f"the pelican service restart step {i}", SESSION, i,
                 cwd=CWD + ("/sub" if i else ""), branch=BRANCH) for i in range(4)]
    write(folder / f"{SESSION}.jsonl", rows)


def dump(url):
    """Every text column of every claude-chats table in Postgres, as one string."""
    with psycopg.connect(url) as conn:
        parts = [str(row) for table in ("conversations", "messages", "purges")
                 for row in conn.execute(f"SELECT * FROM {table}")]
    return "\n".join(parts)


def test_a_token_in_a_folder_or_branch_name_is_redacted_in_postgres_and_purges_still_reach_it(
        tmp_path, pg_db_url, test_model_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", pg_db_url)
    monkeypatch.setenv("CLAUDE_CHATS_MODEL", str(test_model_path))
    history(tmp_path / "projects" / "pelican")
    chats("import", str(tmp_path / "projects"))
    assert json.loads(chats("sync", "--json"))["ok"]
    stored = dump(pg_db_url)
    assert TOKEN not in stored and TOKEN[4:20] not in stored, stored
    assert "[REDACTED:github-token]" in stored

    found = json.loads(chats("search", "--json", "--mode", "fulltext", "--project", CWD, "pelican restart"))
    assert found["source"] == "postgres" and found["hits"], found

    other = tmp_path / "other-machine"            # a second journal holding the same session
    monkeypatch.setenv("CLAUDE_CHATS_HOME", str(other))
    chats("import", str(tmp_path / "projects"))
    monkeypatch.setenv("CLAUDE_CHATS_HOME", str(tmp_path / "chats-home"))

    purged = json.loads(chats("purge", "--project", CWD, "--yes", "--json"))
    assert purged["postgres"] == "purged" and purged["postgres_counts"]["messages"] == 4, purged
    stored = dump(pg_db_url)
    assert TOKEN not in stored, stored                  # the tombstone too: it holds the path as stored

    monkeypatch.setenv("CLAUDE_CHATS_HOME", str(other))
    report = json.loads(chats("sync", "--json"))
    assert report["ok"] and report["purges"]["applied"] == 1 and report["pushed"] == 0, report
    assert json.loads(chats("sessions", "--json")) == []
    with psycopg.connect(pg_db_url) as conn:
        assert conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 0
