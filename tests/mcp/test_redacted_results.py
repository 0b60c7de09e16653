"""What an MCP client may see does not depend on which store answered (issue 16, item 3).

With ``redact`` on (the default) every MCP tool returns text with secrets
replaced by placeholders, whether Postgres answered (it holds redacted text)
or the journal did (it keeps the original): the results go into the model's
context, and from there to the model's API. ``chats search`` and ``chats
show`` on the person's own terminal keep the journal's original.
"""

import asyncio
import json

from fastmcp import Client

from claude_chats.mcp.server import create_server
from tests.support.stand_ins import chats, turns, write

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
PASSWORD = "Tr0ub4dor&3xyzzy"
SECRETS = (TOKEN, PASSWORD, TOKEN[4:20], PASSWORD[:9])
SESSION = "sess-secrets"
CWD = f"/work/tokens/{TOKEN}/app"
BRANCH = f"fix/{TOKEN}"


def history(folder):
    texts = [f"set the deploy credential: export GITHUB_TOKEN={TOKEN} then run the kestrel deploy",
             "ok, the kestrel deploy ran with the token",
             f"also my password is {PASSWORD} for the kestrel admin page",
             "noted, the kestrel admin page password is set"]
    rows = turns(texts, SESSION, cwd=CWD, branch=BRANCH)
    rows.append({"type": "custom-title", "customTitle": f"kestrel deploy with {TOKEN}", "sessionId": SESSION})
    write(folder / f"{SESSION}.jsonl", rows)


async def _tools():
    async with Client(create_server()) as client:
        search = await client.call_tool("search_memory", {"query": "kestrel deploy token password",
                                                          "mode": "fulltext", "limit": 10})
        page = await client.call_tool("get_conversation", {"session_id": SESSION})
        recent = await client.call_tool("list_recent_sessions", {})
        scoped = await client.call_tool("search_memory", {"query": "kestrel", "mode": "fulltext",
                                                          "project_path": CWD})
        return search.structured_content, page.structured_content, recent.structured_content, \
            scoped.structured_content


def leaks(result):
    text = json.dumps(result, ensure_ascii=False)
    return [s for s in SECRETS if s in text]


def test_mcp_results_are_redacted_the_same_from_the_journal_and_from_postgres(tmp_path, pg_db_url,
                                                                              test_model_path, monkeypatch):
    history(tmp_path / "projects" / "kestrel")
    chats("import", str(tmp_path / "projects"))
    monkeypatch.setenv("CLAUDE_CHATS_MODEL", str(test_model_path))

    local = asyncio.run(_tools())
    assert [r["source"] for r in local] == ["local"] * 4
    for result in local:
        assert leaks(result) == [], result
    assert local[0]["hits"] and local[3]["hits"], "the project filter (as typed, with the secret) matched nothing"
    assert "[REDACTED:github-token]" in json.dumps(local[0])

    monkeypatch.setenv("DATABASE_URL", pg_db_url)
    assert json.loads(chats("sync", "--json"))["ok"]
    remote = asyncio.run(_tools())
    assert [r["source"] for r in remote] == ["postgres"] * 4
    for result in remote:
        assert leaks(result) == [], result
    assert remote[3]["hits"], "the project filter matched nothing in Postgres (it stores the path redacted)"

    by_uuid = lambda result: {h["uuid"]: (h["text"], h["session_name"], h["project_path"], h["git_branch"])  # noqa: E731
                              for h in result["hits"]}
    assert by_uuid(local[0]) == by_uuid(remote[0])
    assert [m["text"] for m in local[1]["messages"]] == [m["text"] for m in remote[1]["messages"]]
    session = lambda page: {k: page["session"][k] for k in ("name", "project_path", "git_branch")}  # noqa: E731
    assert session(local[1]) == session(remote[1])

    mine = chats("show", SESSION)          # the person's own terminal, from the journal: the original
    assert TOKEN in chats("search", "--local", "--mode", "fulltext", "kestrel deploy credential") and TOKEN in mine
