"""Fixtures for the end-to-end tests against the real Claude Code CLI.

``claude_code``   the pinned binary (installed by npm into ~/.cache the first time;
                  every test here skips, with the reason, when that is impossible)
``fake_api``      a scripted fake Anthropic API for one test
``scratch``       an isolated Claude Code user with claude-chats installed the way
                  a user installs it (``chats install``), hooks not yet probed
``probed``        the same, every hook run logged and the journal snapshotted after it

The suite's wall time and the Stop-timing figures the tests measured are
printed at the end of the run.
"""

from __future__ import annotations

import time

import pytest

from .fake_api import FakeAnthropic
from .harness import CLAUDE_CODE_VERSION, Scratch, Unavailable, chats_bin, ensure_claude_code

_STATE = {"start": None, "end": None, "unavailable": None, "figures": [], "debug_dirs": []}


def pytest_runtest_logfinish(nodeid, location):
    if _STATE["start"] is not None and "claude_code" in nodeid:
        _STATE["end"] = time.monotonic()


@pytest.fixture(scope="session")
def claude_code():
    """Path of the pinned Claude Code binary (skip with the reason when it cannot be had)."""
    if _STATE["unavailable"]:
        pytest.skip(_STATE["unavailable"])
    try:
        chats_bin()
        t0 = time.monotonic()
        binary = ensure_claude_code()
    except Unavailable as exc:
        _STATE["unavailable"] = f"Claude Code {CLAUDE_CODE_VERSION} not available: {exc}"
        pytest.skip(_STATE["unavailable"])
    _STATE["start"] = _STATE["start"] or t0
    return binary


@pytest.fixture
def fake_api():
    with FakeAnthropic() as api:
        yield api


@pytest.fixture
def scratch(tmp_path, claude_code, fake_api):
    s = Scratch(tmp_path / "cc", claude_code, fake_api.url)
    s.api = fake_api
    s.install()
    _STATE["debug_dirs"].append(s.debug_dir)
    yield s
    s.cleanup()
    _connected_in_time(s)


@pytest.fixture
def probed(scratch):
    scratch.probe()
    return scratch


@pytest.fixture(scope="session")
def new_scratch(tmp_path_factory, claude_code):
    """A factory of installed scratch users, each with its own fake API, for module-scoped
    scenarios that several tests read (``new_scratch(probe=True)``)."""
    apis, made = [], []

    def make(probe=False):
        api = FakeAnthropic().start()
        apis.append(api)
        s = Scratch(tmp_path_factory.mktemp("cc"), claude_code, api.url)
        s.api = api
        s.install()
        _STATE["debug_dirs"].append(s.debug_dir)
        if probe:
            s.probe()
        made.append(s)
        return s

    yield make
    for s in made:
        s.cleanup()
    for api in apis:
        api.stop()
    for s in made:
        _connected_in_time(s)


def _connected_in_time(scratch):
    """Every test here also checks that `chats mcp` was never late (issue 13 item 6): no version
    negotiation probe timed out, no tool result said "still connecting"."""
    faults = scratch.mcp_faults()
    if faults:
        pytest.fail("chats mcp was late:\n" + "\n".join(faults), pytrace=False)


@pytest.fixture
def figures():
    """Append ``(label, text)`` lines to print in the run's summary."""
    return _STATE["figures"]


def pytest_terminal_summary(terminalreporter):
    if _STATE["unavailable"]:
        terminalreporter.write_line(f"tests/claude_code skipped: {_STATE['unavailable']}", yellow=True)
    if _STATE["start"] is None:
        return
    terminalreporter.section(f"Claude Code {CLAUDE_CODE_VERSION} end-to-end")
    for label, text in _STATE["figures"]:
        terminalreporter.write_line(f"{label}: {text}")
    runs = probe_timeouts = 0
    for folder in _STATE["debug_dirs"]:
        for log in folder.glob("*.log"):
            text = log.read_text(errors="replace")
            if 'MCP server "conversation-memory"' in text:
                runs += 1
                probe_timeouts += "version negotiation probe timed out" in text
    if runs:
        terminalreporter.write_line(
            f"MCP: in {probe_timeouts} of {runs} Claude Code runs `chats mcp` missed the version negotiation "
            "probe (server/discover) and was connected by Claude Code's fallback")
    end = _STATE["end"] or time.monotonic()
    terminalreporter.write_line(
        f"tests/claude_code wall time, from the CLI install check to the last of these tests: "
        f"{end - _STATE['start']:.1f} s")
