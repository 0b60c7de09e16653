"""The transcript parser against every case of ../shared/corpus/FORMAT.md.

Fixtures are built here, line by line, as the JSON Claude Code writes; the
cases that involve more than one line or file (titles, summaries, subagents,
incremental reads) also go through the journal, the way the hook stores them.
"""

import base64
import json
import re

import pytest

from claude_chats import transcript as t
from claude_chats.localstore import writer
from tests.support.journals import fulltext

SESSION = "5f1c2a3b-0000-4000-8000-000000000001"
OTHER = "5f1c2a3b-0000-4000-8000-000000000002"
CWD = "/home/ada/work/engine"
PNG = base64.b64encode(bytes(range(256)) * 40).decode()   # 13,656 base64 chars, digits and letters


# -- building lines ------------------------------------------------------------

def envelope(uuid, line_type, **extra):
    obj = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": CWD,
           "sessionId": SESSION, "version": "2.1.39", "gitBranch": "main", "type": line_type,
           "uuid": uuid, "timestamp": "2026-01-05T10:00:00.000Z"}
    obj.update(extra)
    return obj


def user(uuid, content, **extra):
    return envelope(uuid, "user", message={"role": "user", "content": content}, **extra)


def assistant(uuid, blocks, message_id="msg_01", **extra):
    message = {"id": message_id, "type": "message", "role": "assistant", "model": "claude-opus-4-6",
               "content": blocks, "stop_reason": None, "usage": {"input_tokens": 3, "output_tokens": 9}}
    return envelope(uuid, "assistant", message=message, requestId="req_01", **extra)


def text(value):
    return {"type": "text", "text": value}


def tool_use(name, tool_input, block_id="toolu_01"):
    return {"type": "tool_use", "id": block_id, "name": name, "input": tool_input}


def tool_result(content, is_error=None, block_id="toolu_01"):
    block = {"type": "tool_result", "tool_use_id": block_id, "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    return block


def jsonl(*lines):
    return b"".join((ln if isinstance(ln, bytes) else json.dumps(ln).encode()) + b"\n" for ln in lines)


def parse(*lines, ctx=None):
    return t.parse_lines(jsonl(*lines), ctx or t.FileContext(fallback_session_id=SESSION))


def kinds(result):
    return [(r.role, r.kind, r.text) for r in result.records]


def line_uuids(records):
    return {r.uuid.split("#")[0] for r in records}


def accounted(result):
    """Every non-blank line gave records, a title or exactly one skip."""
    return len(line_uuids(result.records)) + len(result.titles) + sum(result.skipped.values()) == result.lines


# -- the journal (empty_journal), through the same write path as the hook and `chats import` ---------

@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "claude" / "projects" / "-home-ada-work-engine"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write(path, *lines, mode="wb"):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, mode) as fh:
        fh.write(jsonl(*lines))
    return path


def stored(journal, session_id=SESSION):
    return [(m["role"], m["kind"], m["content"]) for m in journal.messages(session_id)]


# -- 1. content as a string or a list of blocks --------------------------------------

def test_string_content_is_one_text_record():
    result = parse(user("u1", "How do I rebase onto main?"))
    assert kinds(result) == [("user", "text", "How do I rebase onto main?")]
    assert result.records[0].uuid == "u1"


def test_block_list_content_is_joined_into_one_text_record():
    result = parse(user("u1", [text("First paragraph."), text("Second paragraph.")]))
    assert kinds(result) == [("user", "text", "First paragraph.\nSecond paragraph.")]


def test_assistant_content_as_string():
    result = parse(assistant("a1", "Plain string reply"))
    assert kinds(result) == [("assistant", "text", "Plain string reply")]


# -- 2. assistant replies streamed over several lines sharing message.id ----------------

def test_assistant_lines_sharing_message_id_are_records_grouped_by_message_id():
    result = parse(
        user("u1", "List the files"),
        assistant("a1", [{"type": "thinking", "thinking": "I should run ls.", "signature": "sig"}], "msg_A"),
        assistant("a2", [text("Let me look.")], "msg_A"),
        assistant("a3", [tool_use("Bash", {"command": "ls -la", "description": "list"})], "msg_A"),
        user("u2", [tool_result("README.md\nsetup.py")]),   # interleaved, as in 158 corpus groups
        assistant("a4", [text("Two files.")], "msg_B"),
    )
    assert kinds(result) == [
        ("user", "text", "List the files"),
        ("assistant", "thinking", "I should run ls."),
        ("assistant", "text", "Let me look."),
        ("assistant", "tool_use", "[Bash] ls -la"),
        ("user", "tool_result", "README.md\nsetup.py"),
        ("assistant", "text", "Two files."),
    ]
    by_message = {}
    for r in result.records:
        by_message.setdefault(r.message_id, []).append(r.uuid)
    assert by_message["msg_A"] == ["a1", "a2", "a3"]
    assert by_message["msg_B"] == ["a4"]


def test_block_repeated_under_one_message_id_is_stored_once():
    result = parse(
        assistant("a1", [text("Same words.")], "msg_A"),
        assistant("a2", [text("Same words.")], "msg_A"),              # the same block streamed again
        assistant("a3", [text("Same words."), text("New words.")], "msg_A"),
        assistant("a4", [text("Same words.")], "msg_B"),              # another reply may say it again
    )
    assert [(r.uuid, r.text) for r in result.records] == [
        ("a1", "Same words."), ("a3#1", "New words."), ("a4", "Same words.")]
    assert result.skipped == {"empty assistant": 1}
    assert accounted(result)


def test_parallel_tool_calls_that_read_alike_are_all_kept():
    # Two Edits of one file in one reply render as the same compact line; they are two calls.
    edit = {"file_path": "/src/app.py", "old_string": "a", "new_string": "b"}
    result = parse(
        assistant("a1", [tool_use("Edit", edit, "toolu_A")], "msg_A"),
        assistant("a2", [tool_use("Edit", dict(edit, old_string="c"), "toolu_B")], "msg_A"),
        assistant("a3", [tool_use("Edit", edit, "toolu_A")], "msg_A"),            # toolu_A streamed again
    )
    assert [(r.uuid, r.text) for r in result.records] == [("a1", "[Edit] /src/app.py"), ("a2", "[Edit] /src/app.py")]
    assert result.skipped == {"empty assistant": 1}


def test_part_numbers_do_not_depend_on_what_an_earlier_call_saw():
    lines = [assistant("a1", [text("Same words.")], "msg_A"),
             assistant("a2", [text("Same words."), tool_use("Read", {"file_path": "/x.py"})], "msg_A")]
    whole = parse(*lines)
    one_by_one = [r for ln in lines for r in parse(ln).records]
    by_uuid = {r.uuid: r.text for r in one_by_one}
    for r in whole.records:
        assert by_uuid[r.uuid] == r.text   # re-reading from another offset gives the same identities


def test_several_blocks_in_one_line_get_numbered_uuids():
    result = parse(assistant("a1", [text("Looking."), tool_use("Grep", {"pattern": "TODO", "path": "src"})]))
    assert [(r.uuid, r.kind) for r in result.records] == [("a1", "text"), ("a1#1", "tool_use")]


# -- 3. tool_use as one compact line -----------------------------------------------------

@pytest.mark.parametrize("name, tool_input, expected", [
    ("Bash", {"command": "git status", "description": "Show status"}, "[Bash] git status"),
    ("Read", {"file_path": "/src/app.py", "limit": 20}, "[Read] /src/app.py"),
    ("Grep", {"pattern": "def main", "path": "src"}, "[Grep] def main src"),
    ("TodoWrite", {"todos": [{"content": "write tests", "status": "pending"}, {"content": "fix bug"}]},
     "[TodoWrite] write tests; fix bug"),
    ("Bash", "not a dict", "[Bash]"),
])
def test_tool_use_compact_line(name, tool_input, expected):
    result = parse(assistant("a1", [tool_use(name, tool_input)]))
    assert kinds(result) == [("assistant", "tool_use", expected)]


@pytest.mark.parametrize("name, tool_input, prefix", [
    ("mcp__memory__search", {"query": "rebase onto main", "limit": 5}, "[mcp__memory__search] "),
    (None, {"command": "make test"}, "[tool] "),
])
def test_tool_use_of_other_tools_keeps_their_input_on_one_line(name, tool_input, prefix):
    (record,) = parse(assistant("a1", [tool_use(name, tool_input)])).records
    assert record.kind == "tool_use" and record.text.startswith(prefix) and "\n" not in record.text
    for key, value in tool_input.items():
        assert key in record.text and str(value) in record.text


def test_tool_use_with_deeply_nested_input_does_not_crash():
    nested = {"a": None}
    for _ in range(300):                  # 600 levels: within what json writes, beyond what naive code survives
        nested = {"a": [nested]}
    (record,) = parse(assistant("a1", [tool_use("mcp__x", nested)])).records
    assert record.text.startswith("[mcp__x]")


def test_tool_use_long_input_is_cut():
    line = t.tool_use_line("Write", {"file_path": "/a.py", "content": "x" * 10})
    assert line == "[Write] /a.py"
    long = t.tool_use_line("Bash", {"command": "echo " + "word " * 2000})
    assert len(long) < t.MAX_TOOL_INPUT_CHARS + 20 and long.endswith("[...]")


# -- 4. tool_result: text kept, images and base64 dropped, errors marked ----------------------

def test_tool_result_string_content_kept():
    result = parse(user("u1", [tool_result("On branch main\nnothing to commit")], toolUseResult="Error: x"))
    assert kinds(result) == [("user", "tool_result", "On branch main\nnothing to commit")]


def test_tool_result_block_list_keeps_text_and_drops_images():
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    result = parse(user("u1", [tool_result([text("Screenshot taken."), image,
                                            {"type": "tool_reference", "tool_name": "TaskCreate"}])]))
    (record,) = result.records
    assert record.kind == "tool_result"
    assert record.text == "Screenshot taken.\n[image]\n[tool_reference TaskCreate]"
    assert PNG[:50] not in record.text


def test_tool_result_is_error_is_marked():
    result = parse(user("u1", [tool_result("command not found: gti", is_error=True)]))
    assert kinds(result) == [("user", "tool_result", "[error] command not found: gti")]


def test_tool_result_too_long_is_cut_with_a_marker():
    result = parse(user("u1", [tool_result("line of output\n" * 20_000)]))
    (record,) = result.records
    assert len(record.text) < t.MAX_TOOL_RESULT_CHARS + 100
    assert record.text.endswith("more characters not stored]")


def test_image_and_document_blocks_in_user_content_are_dropped():
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    pdf = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PNG}}
    result = parse(user("u1", [text("What is in this picture?"), image]), user("u2", [image]), user("u3", [pdf]))
    assert kinds(result) == [("user", "text", "What is in this picture?\n[image]"),
                             ("user", "text", "[image]"),
                             ("user", "text", "[document application/pdf]")]


def test_base64_inside_text_is_dropped_and_the_words_around_it_kept():
    result = parse(user("u1", [tool_result(f"Encoded payload: {PNG}\nDone, exit 0")]))
    (record,) = result.records
    assert PNG[:40] not in record.text
    assert record.text.startswith("Encoded payload: [base64 data omitted")
    assert record.text.endswith("Done, exit 0")
    assert not re.search(r"[A-Za-z0-9+/]{300,}", record.text)


@pytest.mark.parametrize("uri", [
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
    "data:image/svg+xml;charset=utf-8;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciLz4=",
    "data:application/pdf;base64," + PNG,
])
def test_data_uris_are_dropped(uri):
    result = parse(assistant("a1", [text(f'Use <img src="{uri}"> and then reload the page')]))
    (record,) = result.records
    assert "base64," not in record.text
    assert record.text.startswith('Use <img src="[base64 data omitted]')
    assert record.text.endswith('"> and then reload the page')


def wrapped(width):
    return "\n".join(PNG[i:i + width] for i in range(0, 2000, width))


@pytest.mark.parametrize("blob", [
    wrapped(76),                                                       # `base64 logo.png`, MIME
    "-----BEGIN CERTIFICATE-----\n" + wrapped(64) + "\n-----END CERTIFICATE-----",   # PEM
    wrapped(76).replace("\n", "\r\n"),
])
def test_wrapped_base64_is_dropped(blob):
    result = parse(user("u1", [tool_result(f"$ base64 logo.png\n{blob}\nexit 0")]))
    (record,) = result.records
    assert PNG[:40] not in record.text and PNG[600:640] not in record.text
    assert record.text.startswith("$ base64 logo.png\n") and record.text.endswith("exit 0")
    assert "[base64 data omitted" in record.text


@pytest.mark.parametrize("value", [
    "sha256 " + "a3f9" * 16,                           # a hash is not base64
    "a3f9c2" * 60,                                     # nor is a long hex string
    "\n".join(["0123456789abcdef" * 5] * 6),           # nor a wrapped hex dump
    "\n".join(["=" * 72] * 6),                         # nor a block of rulers
    "\n".join(["abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmn"] * 6),
    "/usr/local/lib/python3.11/site-packages/x.py",
    "x" * 400,                                         # one letter repeated (a ruler, padding)
])
def test_things_that_only_look_like_base64_are_kept(value):
    assert t.clean_text(value) == value


# -- 5. thinking: stored with its kind, searched only when asked ----------------------------------

def test_thinking_is_stored_with_its_kind_and_not_in_default_kinds():
    result = parse(assistant("a1", [{"type": "thinking", "thinking": "Weigh the quokka option.", "signature": "s"}]))
    assert kinds(result) == [("assistant", "thinking", "Weigh the quokka option.")]
    assert t.THINKING in t.KINDS and t.THINKING not in t.DEFAULT_KINDS


def test_thinking_is_searched_only_when_asked(project, empty_journal):
    path = write(project / f"{SESSION}.jsonl",
                 user("u1", "Pick an animal"),
                 assistant("a1", [{"type": "thinking", "thinking": "Weigh the quokka option.", "signature": "s"}]),
                 assistant("a2", [text("A wombat.")]))
    empty_journal.import_files([str(path)])
    assert fulltext(empty_journal, "quokka") == []
    (hit,) = fulltext(empty_journal, "quokka", kinds=[t.THINKING])
    assert hit["kind"] == "thinking"


def test_empty_thinking_with_only_a_signature_is_skipped():
    result = parse(assistant("a1", [{"type": "thinking", "thinking": "", "signature": "EpAx" + PNG}]))
    assert result.records == [] and result.skipped == {"empty assistant": 1}


# -- 6. text not typed by the person is classified, not "text" --------------------------------------

CAVEAT = ("Caveat: The messages below were generated by the user while running local commands. "
          "DO NOT respond to these messages or otherwise consider them in your response unless the user "
          "explicitly asks you to.")
COMMAND = "<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args></command-args>"
REMINDER = "<system-reminder>\nThe TodoWrite tool hasn't been used recently.\n</system-reminder>"
IDE_FILE = ("<ide_opened_file>The user opened the file /src/app.py in the IDE. This may or may not be related "
            "to the current task.</ide_opened_file>")
IDE_SELECTION = ("<ide_selection>The user selected the lines 3 to 4 from /src/app.py:\ndef main():\n\n"
                 "This may or may not be related to the current task.</ide_selection>")
TASK = ("<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n"
        "<summary>Background command \"npm test\" completed</summary>\n</task-notification>")


@pytest.mark.parametrize("line, expected", [
    (user("u", CAVEAT, isMeta=True), [("meta", CAVEAT)]),
    (user("u", [text("Expanded /review prompt body")], isMeta=True), [("meta", "Expanded /review prompt body")]),
    (user("u", COMMAND), [("command", COMMAND)]),
    (user("u", "<command-message>init is analyzing your codebase…</command-message>\n"
               "<command-name>/init</command-name>"),
     [("command", "<command-message>init is analyzing your codebase…</command-message>\n"
                  "<command-name>/init</command-name>")]),
    (user("u", "<local-command-stdout>Set model to \x1b[1mOpus\x1b[22m</local-command-stdout>"),
     [("command", "<local-command-stdout>Set model to Opus</local-command-stdout>")]),
    (user("u", "<bash-input>uv run pytest</bash-input>"), [("command", "<bash-input>uv run pytest</bash-input>")]),
    (user("u", "<bash-stdout>3 passed</bash-stdout><bash-stderr></bash-stderr>"),
     [("command", "<bash-stdout>3 passed</bash-stdout><bash-stderr></bash-stderr>")]),
    (user("u", REMINDER), [("meta", REMINDER)]),
    (user("u", [text(REMINDER)]), [("meta", REMINDER)]),
    (user("u", TASK), [("meta", TASK)]),
    (user("u", [text(IDE_SELECTION)]), [("meta", IDE_SELECTION)]),
    (user("u", "[Request interrupted by user]"), [("interrupt", "[Request interrupted by user]")]),
    (user("u", [text("[Request interrupted by user for tool use]")]),
     [("interrupt", "[Request interrupted by user for tool use]")]),
])
def test_text_not_typed_by_the_person_is_classified(line, expected):
    result = parse(line)
    assert [(r.kind, r.text) for r in result.records] == expected
    assert all(r.kind != t.TEXT for r in result.records)


@pytest.mark.parametrize("content", [
    "Please fix the flaky test\n\n" + REMINDER,                       # a reminder appended to a typed prompt
    [text("Please fix the flaky test"), text(REMINDER)],
    REMINDER + "\nPlease fix the flaky test",
])
def test_system_reminder_around_a_typed_prompt_keeps_the_prompt(content):
    result = parse(user("u1", content))
    assert kinds(result) == [("user", "text", "Please fix the flaky test")]


@pytest.mark.parametrize("note", [IDE_FILE, IDE_SELECTION])
def test_ide_note_before_a_typed_prompt_keeps_the_prompt_as_text(note):
    # As Claude Code writes it: the note and the prompt are two text blocks of one line.
    result = parse(user("u1", [text(note), text("Let's also migrate to AudioWorklet")]))
    assert kinds(result) == [("user", "meta", note), ("user", "text", "Let's also migrate to AudioWorklet")]
    assert [r.uuid for r in result.records] == ["u1", "u1#1"]


def test_a_prompt_that_mentions_a_tag_is_still_text():
    prompt = "Why does the parser drop everything after <system-reminder> in my prompt?"
    assert kinds(parse(user("u1", prompt))) == [("user", "text", prompt)]


def test_ide_note_with_an_image_keeps_the_image_marker_as_text():
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    result = parse(user("u1", [text(IDE_SELECTION), image]))
    assert kinds(result) == [("user", "meta", IDE_SELECTION), ("user", "text", "[image]")]


# -- 7. compaction: boundary and summary, flagged, same session ---------------------------------------

SUMMARY_TEXT = ("This session is being continued from a previous conversation that ran out of context. "
                "The conversation is summarized below: the user is porting the engine to Rust.")


def compaction_lines():
    return [
        user("u1", "Port the engine to Rust"),
        assistant("a1", [text("Starting with the lexer.")]),
        envelope("c1", "system", subtype="compact_boundary", content="Conversation compacted", level="info",
                 logicalParentUuid="a1", compactMetadata={"trigger": "manual", "preTokens": 155000}),
        user("u2", SUMMARY_TEXT, parentUuid="c1", isCompactSummary=True, isVisibleInTranscriptOnly=True),
        user("u3", "Now the parser", parentUuid="u2"),
    ]


def test_compact_boundary_and_summary_are_flagged_records_of_their_own_kinds():
    result = parse(*compaction_lines())
    assert kinds(result) == [
        ("user", "text", "Port the engine to Rust"),
        ("assistant", "text", "Starting with the lexer."),
        ("system", "compact_boundary", "Conversation compacted (trigger manual, preTokens 155000)"),
        ("user", "compact_summary", SUMMARY_TEXT),
        ("user", "text", "Now the parser"),
    ]
    assert {r.session_id for r in result.records} == {SESSION}
    assert t.COMPACT_SUMMARY in t.DEFAULT_KINDS


def test_compaction_is_not_a_new_session_in_the_journal(project, empty_journal):
    empty_journal.import_files([str(write(project / f"{SESSION}.jsonl", *compaction_lines()))])
    assert [s["session_id"] for s in empty_journal.sessions()] == [SESSION]
    assert [k for _, k, _ in stored(empty_journal)] == ["text", "text", "compact_boundary", "compact_summary", "text"]
    assert [m["role"] for m in empty_journal.messages(SESSION, kinds=["text"])] == ["user", "assistant", "user"]


# -- 8. session names: custom-title, agent-name, summary ----------------------------------------------

def test_custom_title_last_one_wins(project, empty_journal):
    path = write(project / f"{SESSION}.jsonl",
                 user("u1", "hello"),
                 {"type": "custom-title", "customTitle": "first name", "sessionId": SESSION},
                 assistant("a1", [text("hi")]),
                 {"type": "custom-title", "customTitle": "engine port", "sessionId": SESSION})
    empty_journal.import_files([str(path)])
    assert empty_journal.session(SESSION)["name"] == "engine port"
    # Claude Code re-appends the title from time to time; a later rename still wins.
    write(path, {"type": "custom-title", "customTitle": "engine port, part 2", "sessionId": SESSION}, mode="ab")
    empty_journal.import_files([str(path)])
    assert empty_journal.session(SESSION)["custom_title"] == "engine port, part 2"


def test_custom_title_may_name_another_session(project, empty_journal):
    path = write(project / f"{SESSION}.jsonl",
                 user("u1", "hello"),
                 {"type": "custom-title", "customTitle": "the other one", "sessionId": OTHER})
    empty_journal.import_files([str(path)])
    assert empty_journal.session(OTHER)["name"] == "the other one"
    assert empty_journal.session(SESSION)["name"] is None


def test_agent_name_is_a_name_of_its_own():
    result = parse({"type": "agent-name", "agentName": "reviewer", "sessionId": SESSION},
                   {"type": "custom-title", "customTitle": "  ", "sessionId": SESSION})
    assert [(x.source, x.session_id, x.value) for x in result.titles] == [("agent_name", SESSION, "reviewer")]
    assert result.skipped == {"empty title": 1}


def test_agent_name_names_the_session(project, empty_journal):
    empty_journal.import_files([str(write(project / f"{SESSION}.jsonl", user("u1", "hello"),
                                    {"type": "agent-name", "agentName": "reviewer", "sessionId": SESSION}))])
    assert empty_journal.session(SESSION)["name"] == "reviewer"


def test_summary_is_a_title_only_when_its_leaf_is_in_the_same_file(project, empty_journal):
    here = write(project / f"{SESSION}.jsonl",
                 {"type": "summary", "summary": "Rust port of the engine", "leafUuid": "a1"},  # written first
                 user("u1", "Port the engine"), assistant("a1", [text("Done.")]))
    elsewhere = write(project / f"{OTHER}.jsonl",
                      {"type": "summary", "summary": "Someone else's conversation", "leafUuid": "not-here"},
                      {"type": "summary", "summary": "Points into the other file", "leafUuid": "u1"},
                      user("o1", "Unrelated question", sessionId=OTHER))
    empty_journal.import_files([str(here), str(elsewhere)])
    assert empty_journal.session(SESSION)["name"] == "Rust port of the engine"
    assert empty_journal.session(OTHER)["name"] is None
    assert empty_journal.session(OTHER)["summary"] is None


def test_summary_read_before_its_leaf_still_names_the_session(project, empty_journal):
    path = write(project / f"{SESSION}.jsonl",
                 {"type": "summary", "summary": "Rust port of the engine", "leafUuid": "a1"}, user("u1", "Port it"))
    empty_journal.import_files([str(path)])            # one hook run...
    write(path, assistant("a1", [text("Done.")]), mode="ab")
    empty_journal.import_files([str(path)])            # ...and the next: the leaf is now in the same file
    assert empty_journal.session(SESSION)["name"] == "Rust port of the engine"


def test_summary_lines_are_titles_not_records():
    result = parse({"type": "summary", "summary": "A title", "leafUuid": "x"},
                   {"type": "summary", "summary": "", "leafUuid": "y"})
    assert result.records == []
    assert [(x.source, x.value, x.leaf_uuid) for x in result.titles] == [("summary", "A title", "x")]
    assert result.skipped == {"empty summary": 1}


# -- 9. subagents: both layouts, linked to the parent; Warmup ones skipped ----------------------------

def subagent_lines(agent_id, prompt="Find where the config is loaded", session=SESSION):
    extra = {"isSidechain": True, "agentId": agent_id, "sessionId": session}
    return [user(f"{agent_id}-u1", prompt, **extra),
            assistant(f"{agent_id}-a1", [text("It is loaded in config.py.")], f"msg_{agent_id}", **extra)]


def test_subagents_in_both_layouts_are_their_own_conversations_linked_to_the_parent(project, empty_journal):
    main = write(project / f"{SESSION}.jsonl", user("u1", "Investigate the config"))
    beside = write(project / "agent-3ea04571.jsonl", *subagent_lines("3ea04571"))               # <= 2.0
    nested = write(project / SESSION / "subagents" / "agent-a52886dc180afb356.jsonl",           # >= 2.1
                   *subagent_lines("a52886dc180afb356"))
    (project / SESSION / "subagents" / "agent-a52886dc180afb356.meta.json").write_text(
        '{"agentType":"general-purpose","description":"find config"}')
    assert writer.subagent_files(str(main)) == sorted([str(beside), str(nested)])
    writer.ingest_session(empty_journal.conn, str(main))   # what the hook does
    for agent in ("3ea04571", "a52886dc180afb356"):
        session = empty_journal.session(f"{SESSION}:agent-{agent}")
        assert session["parent_session_id"] == SESSION
        assert session["agent_id"] == agent
        messages = empty_journal.messages(session["session_id"])
        assert [(m["role"], m["kind"], m["is_sidechain"]) for m in messages] == [
            ("user", "text", 1), ("assistant", "text", 1)]
    assert stored(empty_journal) == [("user", "text", "Investigate the config")]


def test_nested_subagent_lines_without_session_id_fall_back_to_the_folder():
    ctx = t.FileContext.for_path(f"/p/-proj/{SESSION}/subagents/agent-abc.jsonl")
    line = user("x1", "Look around", isSidechain=True)
    del line["sessionId"]
    (record,) = t.parse_lines(jsonl(line), ctx).records
    assert (record.session_id, record.parent_session_id, record.agent_id) == (f"{SESSION}:agent-abc", SESSION, "abc")


def test_sidechain_lines_in_a_main_file_stay_in_the_session():
    (record,) = parse(user("u1", "side", isSidechain=True, agentId="zz")).records
    assert (record.session_id, record.is_sidechain, record.parent_session_id) == (SESSION, True, None)


def test_warmup_subagent_is_skipped():
    ctx = t.FileContext.for_path(f"/p/-proj/{SESSION}/subagents/agent-w1.jsonl")
    result = t.parse_lines(jsonl(*subagent_lines("w1", prompt="Warmup")), ctx)
    assert result.records == [] and result.skipped == {"warmup subagent": 2}
    assert ctx.warmup is True


def test_warmup_decision_is_carried_across_incremental_reads(project, empty_journal):
    path = project / "agent-c63fe96c.jsonl"
    first, reply = subagent_lines("c63fe96c", prompt="Warmup")
    write(path, first)
    empty_journal.import_files([str(path)])
    assert empty_journal.conn.execute("SELECT warmup FROM transcripts").fetchall() == [(1,)]
    write(path, reply, user("c63fe96c-u2", "Now a real question", isSidechain=True), mode="ab")
    empty_journal.import_files([str(path)])
    assert empty_journal.counts()["messages"] == 0


def test_a_real_subagent_stays_real_across_incremental_reads(project, empty_journal):
    path = project / "agent-41b9470d.jsonl"
    first, reply = subagent_lines("41b9470d")
    write(path, first)
    empty_journal.import_files([str(path)])
    write(path, reply, user("41b9470d-u2", "Warmup", isSidechain=True), mode="ab")
    empty_journal.import_files([str(path)])
    assert [k for _, k, _ in stored(empty_journal, f"{SESSION}:agent-41b9470d")] == ["text", "text", "text"]


# -- 10. bad input never crashes ---------------------------------------------------------------------

def test_zero_bytes():
    result = t.parse_lines(b"", t.FileContext(SESSION))
    assert (result.records, result.skipped, result.consumed, result.lines) == ([], {}, 0, 0)


def test_zero_byte_file_through_the_journal(project, empty_journal):
    path = project / f"{SESSION}.jsonl"
    path.write_bytes(b"")
    stats = empty_journal.import_files([str(path)])
    assert stats.errors == [] and empty_journal.counts()["messages"] == 0


def test_megabyte_lines():
    big_image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                            "data": PNG * 80}}                                  # ~1.1 MB
    words = "the quick brown fox jumps over the lazy dog " * 25_000                              # ~1.1 MB
    result = parse(user("u1", [text("Look at this"), big_image]),
                   user("u2", [tool_result(words)]),
                   assistant("a1", [text(words)]))
    assert all(len(jsonl(ln)) > 1_000_000 for ln in (big_image, words))
    assert kinds(result)[0] == ("user", "text", "Look at this\n[image]")
    assert result.records[1].text.endswith("more characters not stored]")
    assert result.records[2].text == words.strip()


def test_megabyte_line_through_the_journal(project, empty_journal):
    line = user("u1", [text("Here is the scan"), {"type": "image", "source": {
        "type": "base64", "media_type": "image/png", "data": PNG * 80}}])
    path = write(project / f"{SESSION}.jsonl", line, assistant("a1", [text("Nice scan.")]))
    assert path.stat().st_size > 1_000_000
    empty_journal.import_files([str(path)])
    assert stored(empty_journal) == [("user", "text", "Here is the scan\n[image]"), ("assistant", "text", "Nice scan.")]


def test_invalid_utf8_is_replaced_not_fatal():
    good = json.dumps(user("u1", "caf\u00e9 PLACEHOLDER")).encode().replace(b"PLACEHOLDER", b"\xff\xfe bad")
    result = t.parse_lines(good + b"\n" + jsonl(user("u2", "next line")), t.FileContext(SESSION))
    assert kinds(result) == [("user", "text", "caf\u00e9 \ufffd\ufffd bad"), ("user", "text", "next line")]


def test_truncated_last_line_is_not_consumed_until_completed():
    complete = jsonl(user("u1", "first"))
    partial = jsonl(user("u2", "second"))
    ctx = t.FileContext(SESSION)
    result = t.parse_lines(complete + partial[:25], ctx)
    assert kinds(result) == [("user", "text", "first")]
    assert result.consumed == len(complete)
    result = t.parse_lines((complete + partial)[result.consumed:], ctx)
    assert kinds(result) == [("user", "text", "second")]
    assert result.consumed == len(partial)


def test_final_consumes_a_last_line_without_newline():
    data = jsonl(user("u1", "first")) + json.dumps(user("u2", "no newline")).encode()
    result = t.parse_lines(data, t.FileContext(SESSION), final=True)
    assert [r.text for r in result.records] == ["first", "no newline"] and result.consumed == len(data)


def test_truncated_last_line_through_the_journal(project, empty_journal):
    path = project / f"{SESSION}.jsonl"
    complete, partial = jsonl(user("u1", "first")), jsonl(user("u2", "second"))
    path.write_bytes(complete + partial[:30])
    empty_journal.import_files([str(path)])
    assert stored(empty_journal) == [("user", "text", "first")]
    assert empty_journal.conn.execute("SELECT offset FROM transcripts").fetchall() == [(len(complete),)]
    with open(path, "ab") as fh:
        fh.write(partial[30:])
    empty_journal.import_files([str(path)])
    assert stored(empty_journal) == [("user", "text", "first"), ("user", "text", "second")]


def test_torn_line_never_completed_does_not_take_the_next_line_with_it():
    # The writer died mid-line; the next process appended its line to the torn one.
    torn = json.dumps(user("u1", [text("lost to the crash"), tool_result("x")])).encode()
    after = json.dumps(assistant("a2", [text("written after the crash")])).encode()
    for cut in (1, 2, 40, len(torn) // 2, len(torn) - 1):
        result = t.parse_lines(torn[:cut] + after + b"\n", t.FileContext(SESSION))
        assert kinds(result) == [("assistant", "text", "written after the crash")], cut
        assert result.skipped == {"invalid json": 1}


def test_torn_line_through_the_journal(project, empty_journal):
    path = project / f"{SESSION}.jsonl"
    complete, torn = jsonl(user("u1", "first")), jsonl(user("u2", "never finished"))
    path.write_bytes(complete + torn[:30])
    empty_journal.import_files([str(path)])
    write(path, user("u3", "after the restart"), mode="ab")
    stats = empty_journal.import_files([str(path)])
    assert stored(empty_journal) == [("user", "text", "first"), ("user", "text", "after the restart")]
    assert stats.skipped == {"invalid json": 1}


@pytest.mark.parametrize("raw, reason", [
    (b"[1, 2, 3]", "not an object"),
    (b"42", "not an object"),
    (b'"a string"', "not an object"),
    (b"null", "not an object"),
    (b"{not json", "invalid json"),
    (b'{"type": "user", "message": ', "invalid json"),
    (b"[" * 200_000 + b"]" * 200_000, "invalid json"),                        # deeper than the decoder goes
    (b'{"type": "user", "message": {"content": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}", "invalid json"),
    (b'{"type": "future-thing", "uuid": "f1"}', "unknown type future-thing"),
    (b'{"uuid": "f2"}', "unknown type None"),
    (b'{"type": ["user"]}', "unknown type ['user']"),
    (b'{"type": "user", "uuid": "x", "message": "a string"}', "no message"),
    (b'{"type": "assistant", "uuid": "x", "message": null}', "no message"),
    (b'{"type": "user", "uuid": "x", "message": {"content": 42}}', "empty user"),
    (b'{"type": "assistant", "uuid": "x", "message": {"content": {"a": 1}}}', "empty assistant"),
    (b'{"type": "user", "uuid": "x", "message": {"content": [1, null, "s", {"type": "text", "text": 5}]}}',
     "empty user"),
    (b'{"type": "user", "message": {"content": "no uuid here"}}', "no uuid"),
    (b'{"type": "user", "uuid": 17, "message": {"content": "uuid a number"}}', "no uuid"),
    (b'{"type": "system", "subtype": "stop_hook_summary", "uuid": "s1"}', "system stop_hook_summary"),
    (b'{"type": "system", "content": "Running \\u001b[1mPostToolUse\\u001b[22m", "uuid": "s2"}', "system status"),
    (b'{"type": "progress", "data": {"type": "hook_progress"}, "uuid": "p1"}', "progress"),
    (b'{"type": "file-history-snapshot", "messageId": "m", "snapshot": {}}', "bookkeeping"),
    (b'{"type": "queue-operation", "operation": "enqueue", "content": "later"}', "bookkeeping"),
    (b'{"type": "permission-mode", "permissionMode": "plan"}', "bookkeeping"),
    (b'{"type": "last-prompt", "lastPrompt": "x"}', "bookkeeping"),
    (b'{"type": "attachment", "attachment": {"type": "hook_success"}, "uuid": "t1"}', "attachment"),
])
def test_bad_or_unknown_lines_are_skipped_with_a_reason(raw, reason):
    result = t.parse_lines(raw + b"\n" + jsonl(user("ok", "still parsed")), t.FileContext(SESSION))
    assert result.skipped == {reason: 1}
    assert kinds(result) == [("user", "text", "still parsed")]
    assert result.consumed == len(raw) + 1 + len(jsonl(user("ok", "still parsed")))


@pytest.mark.parametrize("field, value", [
    ("timestamp", 1767607200), ("sessionId", ["a"]), ("cwd", {"path": "/x"}), ("gitBranch", 3),
    ("isSidechain", "yes"), ("slug", 5), ("isMeta", None), ("isCompactSummary", 0),
])
def test_wrong_envelope_field_types_are_ignored(field, value):
    line = user("u1", "typed text")
    line[field] = value
    (record,) = parse(line).records
    assert (record.kind, record.text) == ("text", "typed text")
    for name in ("timestamp", "cwd", "git_branch", "slug"):
        assert getattr(record, name) is None or isinstance(getattr(record, name), str)
    assert isinstance(record.session_id, str) and record.is_sidechain in (True, False)


@pytest.mark.parametrize("blocks", [
    [{"type": "text", "text": None}, text("kept")],
    [{"type": "tool_use", "name": {"x": 1}, "input": [1, 2]}, text("kept")],
    [{"type": "thinking", "thinking": 3}, text("kept")],
    ["just a string", text("kept")],
])
def test_wrong_block_field_types_are_ignored(blocks):
    line = assistant("a1", blocks)
    line["message"]["id"] = ["unhashable"]
    result = parse(line)
    assert ("assistant", "text", "kept") in kinds(result)
    assert all(r.message_id is None for r in result.records)


def test_tool_result_content_of_the_wrong_type():
    result = parse(user("u1", [tool_result({"stdout": "x"}), tool_result(None), tool_result([1, "x", None])]))
    assert result.records == [] and result.skipped == {"empty user": 1}


# -- 11. ANSI escapes and NUL bytes ---------------------------------------------------------------------

@pytest.mark.parametrize("raw, clean", [
    ("\x1b[1mbold\x1b[22m and \x1b[38;5;208morange\x1b[0m", "bold and orange"),
    ("\x1b[2K\x1b[1Aprogress 50%", "progress 50%"),
    ("see \x1b]8;;https://example.com\x1b\\the docs\x1b]8;;\x1b\\ now", "see the docs now"),
    ("title\x1b]0;my terminal\x07 done", "title done"),
    ("lone \x1b escape", "lone  escape"),
    ("nul\x00 bytes\x00", "nul bytes"),
])
def test_clean_text_strips_escapes_and_nul(raw, clean):
    assert t.clean_text(raw) == clean


def test_ansi_is_stripped_from_tool_results_and_command_output():
    result = parse(user("u1", [tool_result("\x1b[32m3 passed\x1b[0m in 0.1s")]),
                   user("u2", "<local-command-stdout>\x1b[2mCompacted\x1b[22m</local-command-stdout>"))
    assert [r.text for r in result.records] == ["3 passed in 0.1s",
                                                "<local-command-stdout>Compacted</local-command-stdout>"]
    assert all("\x1b" not in r.text for r in result.records)


def test_nul_bytes_escaped_in_json_are_removed():
    (record,) = parse(user("u1", "before\u0000after")).records
    assert record.text == "beforeafter"


def test_raw_nul_padding_before_a_line_does_not_lose_it():
    # What a crash can leave: a block of zero bytes, then the next line appended after it.
    data = b"\x00" * 64 + jsonl(user("u1", "after the crash"))
    result = t.parse_lines(data, t.FileContext(SESSION))
    assert kinds(result) == [("user", "text", "after the crash")]


def test_a_line_of_nul_bytes_only_is_skipped():
    result = t.parse_lines(b"\x00" * 64 + b"\n" + jsonl(user("u1", "ok")), t.FileContext(SESSION))
    assert result.skipped == {"invalid json": 1} and len(result.records) == 1


# -- 12. envelope fields: kept when present, absent without harm ----------------------------------------

def test_every_record_keeps_its_envelope():
    line = user("u-full", "typed", gitBranch="feature/x", isSidechain=False, slug="eager-humming-orbit",
                timestamp="2026-01-05T10:11:12.345Z", entrypoint="sdk-cli")
    (r,) = parse(line).records
    assert r.as_dict() == {
        "uuid": "u-full", "session_id": SESSION, "role": "user", "kind": "text", "text": "typed",
        "timestamp": "2026-01-05T10:11:12.345Z", "cwd": CWD, "git_branch": "feature/x", "is_sidechain": False,
        "agent_id": None, "parent_session_id": None, "message_id": None, "slug": "eager-humming-orbit",
        "entrypoint": "sdk-cli"}
    (a,) = parse(assistant("a-full", [text("reply")], "msg_Z", isSidechain=True)).records
    assert (a.role, a.message_id, a.is_sidechain, a.cwd, a.git_branch) == ("assistant", "msg_Z", True, CWD, "main")


def test_empty_git_branch_is_none():
    (r,) = parse(user("u1", "x", gitBranch="")).records
    assert r.git_branch is None


@pytest.mark.parametrize("missing", ["timestamp", "sessionId", "cwd", "gitBranch", "version", "parentUuid"])
def test_lines_lacking_envelope_fields_are_still_stored(missing):
    line = user("u1", "typed")
    del line[missing]
    (r,) = t.parse_lines(jsonl(line), t.FileContext.for_path(f"/p/-proj/{SESSION}.jsonl")).records
    assert r.session_id == SESSION   # the file name stands in for a missing sessionId
    assert r.text == "typed"


def test_lines_lacking_uuid_are_counted_not_stored():
    line = user("x", "no identity")
    del line["uuid"]
    result = parse(line)
    assert result.records == [] and result.skipped == {"no uuid": 1}


def test_every_line_is_accounted_for():
    lines = [*compaction_lines(), *[ln for ln in subagent_lines("q")],
             {"type": "summary", "summary": "t", "leafUuid": "u1"},
             {"type": "custom-title", "customTitle": "n", "sessionId": SESSION},
             {"type": "progress", "uuid": "p"}, {"type": "weird"}, b"garbage", b"[]",
             user("e1", ""), assistant("e2", []), user("u9", [tool_result("ok"), tool_result("also")])]
    result = parse(*lines)
    assert result.lines == len(lines)
    assert accounted(result)


# -- 13. the journal: sequence numbers and idempotent re-reads ---------------------------------------------

def test_hook_style_appends_give_sequence_numbers_without_gaps(project, empty_journal):
    path = project / f"{SESSION}.jsonl"
    lines = [user("u1", "one"), assistant("a1", [text("two")]), {"type": "progress", "uuid": "p1"},
             assistant("a2", [tool_use("Bash", {"command": "ls"})]), user("u2", [tool_result("x")]),
             assistant("a3", [text("three"), text("four")], "msg_2")]
    for ln in lines:                            # one hook run per appended line
        write(path, ln, mode="ab")
        empty_journal.import_files([str(path)])
    seqs = [m["seq"] for m in empty_journal.messages(SESSION)]
    assert seqs == list(range(6))
    assert empty_journal.session(SESSION)["message_count"] == 6


def test_reimport_and_reread_from_zero_add_nothing(project, empty_journal):
    path = write(project / f"{SESSION}.jsonl", *compaction_lines(),
                 assistant("a9", [text("x"), tool_use("Bash", {"command": "make"})], "msg_9"))
    first = empty_journal.import_files([str(path)])
    before = empty_journal.counts()
    assert first.messages == before["messages"] == 7
    assert empty_journal.import_files([str(path)]).messages == 0
    empty_journal.conn.execute("UPDATE transcripts SET inode = -1")   # as if the file had been replaced
    again = empty_journal.import_files([str(path)])
    assert (again.messages, again.duplicates) == (0, 7)
    assert empty_journal.counts() == before
    assert [m["seq"] for m in empty_journal.messages(SESSION)] == list(range(7))


def test_session_row_carries_project_branch_and_times(project, empty_journal):
    path = write(project / f"{SESSION}.jsonl",
                 user("u1", "a", timestamp="2026-01-05T10:00:00.000Z", slug="eager-humming-orbit"),
                 assistant("a1", [text("b")], timestamp="2026-01-05T09:59:00.000Z", gitBranch="dev"))
    empty_journal.import_files([str(path)])
    s = empty_journal.session(SESSION)
    assert (s["project_path"], s["git_branch"], s["first_at"], s["last_at"], s["name"]) == (
        CWD, "dev", "2026-01-05T09:59:00.000Z", "2026-01-05T10:00:00.000Z", "eager-humming-orbit")
