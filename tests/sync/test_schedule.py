"""``chats schedule``: cron and systemd entries, driven through stand-in crontab/systemctl programs."""

import plistlib
import stat
import sys

import pytest

from claude_chats.sync import schedule
from tests.support.cli import chats

CRONTAB = """#!/bin/sh
store="$FAKE_STATE/crontab"
if [ "$1" = "-l" ]; then
  [ -f "$store" ] || { echo "no crontab for $USER" >&2; exit 1; }
  cat "$store"
elif [ "$1" = "-" ]; then
  cat > "$store"
fi
"""

SYSTEMCTL = """#!/bin/sh
echo "$@" >> "$FAKE_STATE/systemctl.log"
[ "$2" = "is-system-running" ] && echo running
exit 0
"""


@pytest.fixture
def fake_tools(tmp_path, monkeypatch):
    """Stand-ins for crontab and systemctl first on PATH, keeping their state in a folder."""
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir()
    state.mkdir()
    for name, text in (("crontab", CRONTAB), ("systemctl", SYSTEMCTL)):
        path = bin_dir / name
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_STATE", str(state))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return state


def test_cron_install_show_remove_keeps_other_entries(fake_tools):
    (fake_tools / "crontab").write_text("0 3 * * * /usr/bin/backup\n")
    result = chats("schedule", "install", "--via", "cron", "--every", "10")
    assert result.exit_code == 0, result.output
    chats("schedule", "install", "--via", "cron", "--every", "20")      # replaces, never duplicates
    table = (fake_tools / "crontab").read_text().splitlines()
    assert table[0] == "0 3 * * * /usr/bin/backup"
    (entry,) = [line for line in table if schedule.CRON_TAG in line]
    assert entry.startswith("*/20 * * * * ") and "-m claude_chats.sync --background" in entry
    assert "CLAUDE_CHATS_HOME=" in entry
    assert "claude_chats.sync" in chats("schedule", "show", "--via", "cron").output
    assert "removed" in chats("schedule", "remove", "--via", "cron").output
    assert (fake_tools / "crontab").read_text() == "0 3 * * * /usr/bin/backup\n"
    assert "nothing installed" in chats("schedule", "remove", "--via", "cron").output


def test_systemd_timer_is_detected_and_enabled(fake_tools, tmp_path):
    assert isinstance(schedule.detect(), schedule.Systemd)
    result = chats("schedule", "install", "--every", "15")
    assert result.exit_code == 0 and "systemd" in result.output
    units = tmp_path / "xdg" / "systemd" / "user"
    timer = (units / "claude-chats-sync.timer").read_text()
    service = (units / "claude-chats-sync.service").read_text()
    assert "OnUnitActiveSec=15min" in timer and "Nice=10" in service
    assert "-m claude_chats.sync --background" in service
    log = (fake_tools / "systemctl.log").read_text()
    assert "--user enable --now claude-chats-sync.timer" in log
    assert "OnUnitActiveSec" in chats("schedule", "show").output
    chats("schedule", "remove")
    assert not units.joinpath("claude-chats-sync.timer").exists()
    assert "--user disable --now claude-chats-sync.timer" in (fake_tools / "systemctl.log").read_text()


def test_launchd_agent_definition():
    agent = schedule.Launchd().plist(30)
    assert agent["StartInterval"] == 1800 and agent["ProgramArguments"][1:] == [
        "-m", "claude_chats.sync", "--background"]
    plistlib.dumps(agent)   # serialisable as written


def test_no_scheduler_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    if sys.platform == "darwin":
        pytest.skip("launchd is always there on macOS")
    with pytest.raises(schedule.ScheduleError, match="no scheduler found"):
        schedule.detect()
