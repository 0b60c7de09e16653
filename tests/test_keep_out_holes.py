"""Issue 21, item 7: the holes in keeping out. Each case runs the hook as a fresh process, event by
event as Claude Code runs it, and ``chats import`` (a fresh journal reading the same files: another
machine, a fork's copy, a journal rebuilt) as a subprocess; what is kept out is in no byte stored.

- ``exclude_projects`` naming a symlinked folder holds for the real path Claude Code records, and
  the reverse (the verdict is computed once per folder: the journal keeps it);
- a subagent resumed in a ``#chats-skip`` turn (first read in a normal one) is kept out for that
  run, with its final answer;
- the older layout (``agent-<id>.jsonl`` beside the session) is kept out by ``#chats-off``;
- a marker in a slash command's arguments and in a bash-mode (``!``) command holds from the
  transcript itself.
"""

import json
import os
import subprocess

import apsw
import pytest

from claude_chats import paths
from claude_chats.times import now_iso
from tests.support import lines
from tests.support.cli import chats
from tests.support.hooks import CHATS, hook_event, hook_log
from tests.support.keptout import append, folder, stored_bytes

SECRET, PUBLIC = "XyzzyHoleSecret", "XyzzyHolePublic"
PROJECT = "/work/proj"
_clock = iter(range(10_000))   # numbers for ids
_last = [""]


def _ts():
    """A line's timestamp as Claude Code writes it: the machine's clock when the line is written (the
    hook's clock too), in its format; each later than the one before."""
    stamp = now_iso()
    while stamp <= _last[0]:
        stamp = now_iso()
    _last[0] = stamp
    return stamp


def _event(path, event, session, cwd=PROJECT, **fields):
    assert hook_event(path, event, session, cwd=cwd, **fields) == b""


def _cli(*args):
    proc = subprocess.run(CHATS + [str(a) for a in args], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def _texts(session):
    """What ``chats show`` prints of a session's messages (a subprocess)."""
    return [m["content"] for m in json.loads(_cli("show", session, "--json"))["messages"]]


def _fresh_import():
    """The journal gone (the settings kept), ``chats import`` of every transcript (a subprocess)."""
    for name in os.listdir(paths.data_dir()):
        if name.startswith("journal.db"):
            os.remove(os.path.join(paths.data_dir(), name))
    _cli("import")


def _check(data, public=True):
    assert SECRET.encode() not in data and SECRET.lower().encode() not in data.lower()
    assert not public or PUBLIC.encode() in data   # the check sees what is stored
    assert not [e for e in hook_log() if "Error" in e["error"]], hook_log()


def _plain_turn(path, session, prompt, answer, cwd=PROJECT):
    _event(path, "UserPromptSubmit", session, prompt=prompt)
    append(path, lines.user(prompt, session=session, cwd=cwd, ts=_ts()),
           lines.assistant(answer, session=session, cwd=cwd, ts=_ts()))
    _event(path, "Stop", session, last_assistant_message=answer)


# -- exclude_projects: the given and the resolved forms --------------------------------------


@pytest.mark.parametrize("named", ["link", "real", "glob", "env"])
def test_an_excluded_project_named_by_a_symlink_or_its_real_path_is_kept_out(tmp_path, monkeypatch, named):
    real = tmp_path / "work" / "acme"
    real.mkdir(parents=True)
    (tmp_path / "acme-link").symlink_to(real)
    (tmp_path / "work-link").symlink_to(tmp_path / "work")
    pattern, recorded = {"link": (tmp_path / "acme-link", real), "real": (real, tmp_path / "acme-link"),
                         "glob": (tmp_path / "work-link" / "ac*", real),
                         "env": (tmp_path / "acme-link", real)}[named]
    if named == "env":
        monkeypatch.setenv("CLAUDE_CHATS_EXCLUDE_PROJECTS", str(pattern))
    else:
        assert chats("config", "set", "exclude_projects", str(pattern)).exit_code == 0
    path = os.path.join(folder(str(recorded)), "sess-acme.jsonl")
    # the payload names another folder: the lines' cwd must keep them out
    _plain_turn(path, "sess-acme", f"the {SECRET} merger", f"{SECRET} noted", cwd=str(recorded))
    public = os.path.join(folder(PROJECT), "sess-pub.jsonl")
    _plain_turn(public, "sess-pub", f"{PUBLIC} question", f"{PUBLIC} answer")
    _check(stored_bytes())
    conn = apsw.Connection(paths.journal_path(), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        cached = json.loads(conn.execute("SELECT value FROM state WHERE key = 'exclude_projects'").fetchall()[0][0])
    finally:
        conn.close()
    # each folder judged once, its verdict kept: a turn resolves no path it judged before
    assert cached["verdicts"] == {str(recorded): True, PROJECT: False}
    _event(path, "Stop", "sess-acme", cwd=str(recorded))   # the payload's own cwd, resolved too
    _fresh_import()
    _check(stored_bytes())
