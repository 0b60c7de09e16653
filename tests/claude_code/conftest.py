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

_STATE = {"start": None, "unavailable": None, "figures": []}


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
    return s


@pytest.fixture
def probed(scratch):
    scratch.probe()
    return scratch


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
    terminalreporter.write_line(
        f"tests/claude_code wall time since the first CLI test: {time.monotonic() - _STATE['start']:.1f} s")
