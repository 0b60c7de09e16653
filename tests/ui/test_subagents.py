"""Which Task/Agent call started which subagent: on the real transcripts of ../shared and a made one.

The truth is taken from what the journal does not keep: the ``tool_use`` id of each call, the
result that answers it (``tool_use_id``) and the agent id Claude Code put in that result
(``toolUseResult.agentId``, or the ``agentId: ...`` line of its text). ``subagents.links`` must find
the same pairs from the stored messages alone.
"""

import json

import pytest

from claude_chats.localstore.journal import Journal
from claude_chats.localstore.search import LocalSearch
from claude_chats.pgstore.search import PgLink
from claude_chats.search.searcher import Searcher
from claude_chats.ui import render, subagents
from claude_chats.ui.subagents import Subagent
from tests.support import lines
from tests.support.fakes import HashEmbedder
from tests.support.journals import sync_corpus
from tests.support.stand_ins import write

# parents in ../shared/corpus/transcripts that start subagents whose transcripts are there too
PARENTS = [
    "claude-code-log/real_projects/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl",
    "claude-code-log/real_projects/-Users-dain-workspace-coderabbit-review-helper/"
    "cb2e607c-c758-415a-8b45-c49e4631906a.jsonl",
    "claude-code-log/real_projects/-src-experiments-claude_p/29ccd257-68b1-427f-ae5f-6524b7cb6f20.jsonl",
]


def truth(path):
    """{(line uuid, block index): agent id} of the Task/Agent calls of a transcript, from its tool ids."""
    calls, agents = {}, {}
    for raw in path.read_text().splitlines():
        obj = json.loads(raw)
        content = (obj.get("message") or {}).get("content") if isinstance(obj.get("message"), dict) else None
        for index, block in enumerate(content if isinstance(content, list) else []):
            if block.get("type") == "tool_use" and block.get("name") in ("Task", "Agent"):
                calls[block["id"]] = (obj["uuid"], index)
            if block.get("type") == "tool_result" and block.get("tool_use_id") in calls:
                extra = obj.get("toolUseResult") if isinstance(obj.get("toolUseResult"), dict) else {}
                said = extra.get("agentId") or _agent_line(block.get("content"))
                if said:
                    agents[calls[block["tool_use_id"]]] = said
    return agents


def _agent_line(content):
    text = json.dumps(content)
    at = text.find("agentId: ")
    return text[at + 9:].split(" ", 1)[0] if at >= 0 else None


def journal_of(tmp_path, files):
    journal = Journal.open(str(tmp_path / "journal.db"))
    stats = journal.import_files([str(f) for f in files])
    assert not stats.errors, stats.errors
    return journal


def observed(journal, parent, message_chars=4_000):
    """``links``' arguments as the session page reads them through a Searcher: the parent's messages
    (pages cut each to ``message_chars``) and its subagents with their first prompts."""
    searcher = Searcher(LocalSearch(journal))
    page = searcher.conversation(parent, limit=500, max_chars=None, message_chars=message_chars)
    rows = [s for s in journal.sessions(limit=1000, include_subagents=True) if s["parent_session_id"] == parent]
    return page["messages"], subagents.read_subagents(searcher, rows, message_chars)


def expected(journal, parent, path):
    """{seq: subagent session id} from the transcript's own ids, for the subagents the journal has."""
    seqs = {row["uuid"]: row["seq"] for row in journal.messages(parent)}
    stored = {s["session_id"] for s in journal.sessions(limit=1000, include_subagents=True)}
    out = {}
    for (uuid, index), agent in truth(path).items():
        sub = f"{parent}:agent-{agent}"
        key = uuid if index == 0 else f"{uuid}#{index}"
        if sub in stored:
            out[seqs.get(key, seqs.get(uuid))] = sub
    return out


@pytest.mark.parametrize("relative", PARENTS)
@pytest.mark.parametrize("message_chars", [4_000, 300])
def test_the_calls_of_real_transcripts_link_their_subagents(corpus, tmp_path, relative, message_chars):
    path = corpus / relative
    folder = path.parent
    files = [path] + sorted(folder.glob("agent-*.jsonl")) + sorted((folder / path.stem).glob("subagents/agent-*.jsonl"))
    journal = journal_of(tmp_path, files)
    parent = path.stem
    want = expected(journal, parent, path)
    assert want, "the transcript's calls started no stored subagent: the test would prove nothing"
    messages, subs = observed(journal, parent, message_chars)
    got = subagents.links(messages, subs)
    assert got == want
    calls = subagents.read_calls(Searcher(LocalSearch(journal)), parent, message_chars, per_page=7)
    assert {m["kind"] for m in calls} <= {"tool_use", "tool_result"}
    rows = [s for s in journal.sessions(limit=1000, include_subagents=True) if s["parent_session_id"] == parent]
    for seq, sub in want.items():
        assert subagents.call_of(sub, messages, subs) == seq
        assert subagents.call_of(sub, calls, subs) == seq
        assert subagents.back(Searcher(LocalSearch(journal)), journal.session(sub), rows) == (parent, seq)
        way_back = render.parent_link(Searcher(LocalSearch(journal)), journal.session(sub), rows)
        assert way_back["href"] == f"/session/{parent}?at={seq}#seq-{seq}" and way_back["name"]
        assert subagents.parent_of(journal.session(sub)) == parent
        call = next(m for m in messages if m["seq"] == seq)
        assert f'class="subagent-link" href="/session/{sub}"' in render.message(call, link=sub)
    assert render.subagent_links(messages, rows, Searcher(LocalSearch(journal))) == want


# -- a made transcript: parallel calls, results out of order, a prompt the journal changed --------

PARENT = "sess-parent"
COMMON = "You are a careful reviewer of this repository. " * 6     # over 200 characters alike


def call(tool_id, name, prompt, ts, description="look"):
    block = {"type": "tool_use", "id": tool_id, "name": name,
             "input": {"description": description, "subagent_type": "general-purpose", "prompt": prompt}}
    return lines.assistant([block], session=PARENT, ts=ts)


def result(tool_id, text, ts):
    return lines.user([{"type": "tool_result", "tool_use_id": tool_id, "content": [{"type": "text", "text": text}]}],
                      session=PARENT, ts=ts)


def agent_file(folder, agent, prompt, ts):
    return write(folder / PARENT / "subagents" / f"agent-{agent}.jsonl", [
        lines.user(prompt, session=PARENT, ts=ts, isSidechain=True, agentId=agent),
        lines.assistant("done", session=PARENT, ts=ts.replace(".5", ".9"), isSidechain=True, agentId=agent)])


def made(folder):
    rows = [lines.user("review the code, in parallel", session=PARENT, ts="2026-03-01T10:00:00.000Z"),
            call("t1", "Agent", COMMON + "Look at the parser.", "2026-03-01T10:00:01.000Z"),
            call("t2", "Agent", COMMON + "Look at the writer.", "2026-03-01T10:00:01.100Z"),
            call("t3", "Task", "Summarise the failures", "2026-03-01T10:05:00.000Z"),
            result("t2", "writer ok\nagentId: a22 (use SendMessage with to: 'a22' to continue this agent)",
                   "2026-03-01T10:01:00.000Z"),
            result("t1", "parser ok\nagentId: a11 (use SendMessage with to: 'a11' to continue this agent)",
                   "2026-03-01T10:01:30.000Z"),
            result("t3", "summary done\nagentId: a33 (use SendMessage with to: 'a33' to continue this agent)",
                   "2026-03-01T10:06:00.000Z"),
            call("t4", "Task", "Count the tests", "2026-03-01T10:10:00.000Z"),
            result("t4", "42 tests", "2026-03-01T10:11:00.000Z"),
            call("t5", "Agent", "Nobody ran this one", "2026-03-01T11:00:00.000Z"),
            # two calls at once whose subagents say other prompts: by time, in order
            call("t6", "Task", "Read the half called first", "2026-03-01T12:00:00.000Z"),
            call("t7", "Task", "Read the half called second", "2026-03-01T12:00:00.200Z")]
    files = [write(folder / f"{PARENT}.jsonl", rows),
             agent_file(folder, "a11", COMMON + "Look at the parser.", "2026-03-01T10:00:01.500Z"),
             agent_file(folder, "a22", COMMON + "Look at the writer.", "2026-03-01T10:00:01.500Z"),
             # its prompt as stored differs from the call's (a note Claude Code added)
             # (and it began after the time window): the agent id in the result links it
             agent_file(folder, "a33", "Summarise the failures, as asked before", "2026-03-01T10:08:00.500Z"),
             # no prompt alike, no agent id in the result (1.x): the time links it
             agent_file(folder, "a44", "count them", "2026-03-01T10:10:00.500Z"),
             agent_file(folder, "a66", "go on with part A", "2026-03-01T12:00:00.500Z"),
             agent_file(folder, "a77", "go on with part B", "2026-03-01T12:00:00.600Z")]
    return files


def test_parallel_calls_out_of_order_results_and_older_versions(tmp_path):
    journal = journal_of(tmp_path, made(tmp_path / "projects"))
    messages, subs = observed(journal, PARENT)
    seq = _call_seqs(messages)
    assert subagents.links(messages, subs) == {
        seq["parser."]: f"{PARENT}:agent-a11", seq["writer."]: f"{PARENT}:agent-a22",
        seq["failures"]: f"{PARENT}:agent-a33", seq["tests"]: f"{PARENT}:agent-a44",
        seq["first"]: f"{PARENT}:agent-a66", seq["second"]: f"{PARENT}:agent-a77"}
    assert subagents.call_of(f"{PARENT}:agent-a33", messages, subs) == seq["failures"]
    assert subagents.call_of(f"{PARENT}:agent-a99", messages, subs) is None


def test_a_page_without_the_results_links_by_prompt_and_time_only(tmp_path):
    journal = journal_of(tmp_path, made(tmp_path / "projects"))
    messages, subs = observed(journal, PARENT)
    seq = _call_seqs(messages)
    calls_only = [m for m in messages if m["kind"] != "tool_result"]
    assert subagents.links(calls_only, subs) == {
        seq["parser."]: f"{PARENT}:agent-a11", seq["writer."]: f"{PARENT}:agent-a22",
        seq["tests"]: f"{PARENT}:agent-a44", seq["first"]: f"{PARENT}:agent-a66",
        seq["second"]: f"{PARENT}:agent-a77"}


def test_postgres_links_the_same_calls(tmp_path, pg_db_url):
    journal = journal_of(tmp_path, made(tmp_path / "projects"))
    sync_corpus(journal, HashEmbedder(), pg_db_url)
    messages, subs = observed(journal, PARENT)
    searcher = Searcher(None, PgLink(pg_db_url), HashEmbedder)
    page = searcher.conversation(PARENT, limit=500, max_chars=None)
    assert page["source"] == "postgres"
    rows = [s for s in searcher.recent_sessions(limit=100, include_subagents=True, origin="any")["sessions"]
            if s["parent_session_id"] == PARENT]
    from_pg = subagents.read_subagents(searcher, rows)
    assert sorted(from_pg, key=repr) == sorted(subs, key=repr)
    assert subagents.links(page["messages"], from_pg) == subagents.links(messages, subs)
    assert len(subagents.links(messages, subs)) == 6
    searcher.close()


def _call_seqs(messages):
    """{the last word of the call's prompt: its seq}"""
    return {m["text"].split(" ")[-1]: m["seq"] for m in messages if m["kind"] == "tool_use"}


def test_a_session_that_is_no_subagent_has_no_way_back(tmp_path):
    journal = journal_of(tmp_path, made(tmp_path / "projects"))
    searcher = Searcher(LocalSearch(journal))
    assert subagents.back(searcher, journal.session(PARENT), []) == (None, None)
    assert render.parent_link(searcher, journal.session(PARENT), []) is None


def test_without_a_searcher_the_links_come_from_ids_and_times(tmp_path):
    journal = journal_of(tmp_path, made(tmp_path / "projects"))
    messages, subs = observed(journal, PARENT)
    rows = [s for s in journal.sessions(limit=100, include_subagents=True) if s["parent_session_id"] == PARENT]
    seq = _call_seqs(messages)
    # a11/a22: their parallel calls' results name them (each taking the latest call before);
    # a33 by its id; a44, a66, a77 by time
    got = render.subagent_links(messages, rows)
    assert got[seq["failures"]] == f"{PARENT}:agent-a33" and got[seq["tests"]] == f"{PARENT}:agent-a44"
    assert got[seq["first"]] == f"{PARENT}:agent-a66" and got[seq["second"]] == f"{PARENT}:agent-a77"
    assert render.subagent_links(messages, rows, Searcher(LocalSearch(journal))) == subagents.links(messages, subs)


def test_ids_that_are_not_ids_are_never_linked():
    prompt = "go and read every file of the repository"
    messages = [{"seq": 1, "role": "assistant", "kind": "tool_use", "timestamp": "2026-03-01T10:00:00.000Z",
                 "text": f"[Task] x general-purpose {prompt}"}]
    at = "2026-03-01T10:00:00.500Z"
    assert subagents.links(messages, [Subagent("s:agent-a1", at, prompt)]) == {1: "s:agent-a1"}
    hostile = [Subagent('s:agent-x" onclick="alert(1)', at, prompt), Subagent("../../etc/passwd", at, prompt),
               Subagent("s:agent-../x", at, prompt)]
    assert subagents.links(messages, hostile) == {}
    assert render.session_href('s:agent-x" onclick="alert(1)') is None


@pytest.mark.skipif(not hasattr(Searcher, "subagents"), reason="Searcher.subagents comes with the app (main)")
def test_through_the_searchers_own_subagent_rows(tmp_path):
    journal = journal_of(tmp_path, made(tmp_path / "projects"))
    messages, subs = observed(journal, PARENT)
    searcher = Searcher(LocalSearch(journal))
    rows = searcher.subagents(PARENT)
    assert render.subagent_links(messages, rows, searcher) == subagents.links(messages, subs)
    seq = _call_seqs(messages)["parser."]
    assert render.parent_link(searcher, journal.session(f"{PARENT}:agent-a11")) == {
        "href": f"/session/{PARENT}?at={seq}#seq-{seq}", "name": PARENT, "seq": seq}
