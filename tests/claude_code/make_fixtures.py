"""Regenerate tests/claude_code/fixtures/: transcripts the real Claude Code wrote.

    .venv/bin/python -m tests.claude_code.make_fixtures

Each scenario runs the pinned CLI against the fake API in a scratch HOME (no
claude-chats hooks: the files are Claude Code's alone) and copies what it
wrote under ``fixtures/<scenario>/``, keeping the layout below the project
folder (``<session>.jsonl``, ``<session>/subagents/agent-*.jsonl`` and
``.meta.json``). Nothing is scrubbed: every byte comes from the fake API, the
scratch folders and Claude Code itself. ``fixtures/MANIFEST.json`` lists what
each scenario did and which session ids it produced.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import sys
import tempfile
import time

from .fake_api import FakeAnthropic
from .harness import CLAUDE_CODE_VERSION, Scratch, ensure_claude_code

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"


def _copy_project(scratch: Scratch, dest: pathlib.Path) -> list[str]:
    (project_dir,) = [p for p in scratch.projects_dir().iterdir() if p.is_dir()]
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(project_dir, dest, ignore=shutil.ignore_patterns("memory"))
    return sorted(p.stem for p in dest.glob("*.jsonl"))


def _wait_for(predicate, timeout=30):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if predicate():
            return True
        time.sleep(0.2)
    raise RuntimeError("timed out")


def print_bash(s):
    """One print-mode turn with a Bash tool call."""
    s.print_turn("list the greeting @bash(echo hello-fixture)", stream=False)


def print_subagent(s):
    """A print-mode turn delegating to a foreground general-purpose subagent."""
    s.print_turn("delegate @agent(count the apples in the basket)", stream=False)


def print_fork(s):
    """A turn with a Bash call, then `--resume <id> --fork-session` with one more."""
    first = s.print_turn("parent turn about kumquats @bash(echo kumquat-out)")
    s.print_turn("fork turn about quinces", "--resume", first.session_id, "--fork-session", stream=False)


def print_pr_link(s):
    """`gh pr create` (a stand-in gh prints a PR URL): Claude Code writes pr-link."""
    gh = s.bin / "gh"
    gh.write_text('#!/bin/sh\necho "https://github.com/example/widgets/pull/42"\n')
    gh.chmod(0o755)
    s.print_turn("open the pull request @bash(gh pr create --title Widgets --body Done)", stream=False)


def interactive_session(s):
    """Interactive (tmux), nonessential traffic on: turns, ai-title, /rename, /compact, /recap, /fork."""
    s.write_settings({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}})
    with s.interactive(CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=None) as ui:
        ui.wait_idle()
        ui.type("tell me about the lighthouse keeper's logbook")
        ui.wait_for("Scripted reply to: tell me about the lighthouse")
        ui.type("check the lamp @bash(echo lamp-ok)")
        ui.wait_for("The command printed: lamp-ok")
        ui.type("/rename lighthouse-notes")
        ui.wait_for("Session renamed to: lighthouse-notes")
        ui.type("/compact keep the lamp schedule")
        ui.wait_for("Compacted")
        ui.type("after the compaction, what next?")
        ui.wait_for("Scripted reply to: after the compaction")
        ui.type("/recap")
        ui.wait_for("AWAY-SUMMARY-MARKER")
        ui.type("/fork")
        ui.wait_for("session waiting for a prompt")
        time.sleep(2)


SCENARIOS = [print_bash, print_subagent, print_fork, print_pr_link, interactive_session]


def main(names=None):
    binary = ensure_claude_code()
    manifest = {"claude_code_version": CLAUDE_CODE_VERSION, "scenarios": {}}
    for fn in SCENARIOS:
        if names and fn.__name__ not in names:
            continue
        with tempfile.TemporaryDirectory() as tmp, FakeAnthropic() as api:
            s = Scratch(pathlib.Path(tmp), binary, api.url)
            try:
                fn(s)
                time.sleep(1)
            finally:
                s.cleanup()  # /fork leaves a daemon running
            sessions = _copy_project(s, FIXTURES / fn.__name__.replace("_", "-"))
            manifest["scenarios"][fn.__name__.replace("_", "-")] = {
                "what": fn.__doc__, "sessions": sessions,
                "api_requests": [r.kind or r.path for r in api.requests]}
            print(fn.__name__, sessions)
    path = FIXTURES / "MANIFEST.json"
    if names and path.exists():
        old = json.loads(path.read_text())
        old["scenarios"].update(manifest["scenarios"])
        manifest = old
    path.write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:] or None)
