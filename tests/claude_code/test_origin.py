"""Issue 17: sessions made by scripts and SDK runs, recorded by the real Claude Code 2.1.332, are
flagged and left out of search and session lists by default.

``claude -p`` writes ``entrypoint: sdk-cli``, the terminal UI ``cli``; a script driving the UI
(these tests do) sets ``CLAUDE_CHATS_MACHINE_MADE=1`` for its hooks. The harness sets it for
every run; here it is taken away where a person's session is meant.
"""

import pytest

PERSON = {"CLAUDE_CHATS_MACHINE_MADE": None}


@pytest.fixture(scope="module")
def three(new_scratch):
    """(scratch, {what: session id}): claude -p, a person's terminal session, a scripted terminal session."""
    s = new_scratch(probe=True)
    printed = s.print_turn("the gooseberry report @bash(echo gooseberry-print)", **PERSON)
    assert printed.returncode == 0, printed.stderr
    sessions = {"print": printed.session_id}
    for what, env in (("person", PERSON), ("script", {})):
        with s.interactive(**env) as ui:
            ui.wait_idle()
            run = ui.turn(f"the gooseberry notes of the {what} @bash(echo gooseberry-{what})")
            sessions[what] = run["payload"]["session_id"]
    return s, sessions


def _found(scratch, *args):
    result = scratch.chats_json("search", "gooseberry", "--local", "--mode", "fulltext", "--per-session", "0",
                                "-n", "50", *args)
    return {hit["session_id"] for hit in result["hits"]}


def test_what_claude_code_writes_says_where_a_session_came_from(three):
    s, ids = three
    entrypoints = {what: {r.get("entrypoint") for r in s.transcript(sid).of_type("user")} for what, sid in ids.items()}
    assert entrypoints == {"print": {"sdk-cli"}, "person": {"cli"}, "script": {"cli"}}


def test_search_and_sessions_show_a_persons_sessions_by_default(three):
    s, ids = three
    assert _found(s) == {ids["person"]}
    assert _found(s, "--origin", "machine") == {ids["print"], ids["script"]}
    assert _found(s, "--origin", "any") == set(ids.values())
    listed = {row["session_id"]: row for row in s.chats_json("sessions", "--origin", "any")}
    assert {what: (listed[sid]["entrypoint"], listed[sid]["machine_made"]) for what, sid in ids.items()} == {
        "print": ("sdk-cli", 1), "person": ("cli", 0), "script": ("cli", 1)}
    assert {row["session_id"] for row in s.chats_json("sessions")} == {ids["person"]}
