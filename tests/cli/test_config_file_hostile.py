"""A config file no one could mean gives every command one line naming it (issue 21, item 8).

``tomllib`` reads nested arrays and tables by recursion: a 5,000-deep array in config.toml raised
``RecursionError`` from every command that reads the file, a traceback each time. A FIFO there would
hang every command. Through ``chats`` as processes; the hook, as a fresh process, exits 0 and logs.
"""

import os
import subprocess

import pytest

from claude_chats import paths
from tests.support import lines
from tests.support.hooks import CHATS, hook_event, hook_log

COMMANDS = (["config", "show"], ["config", "set", "threads", "2"], ["status", "--offline"],
            ["search", "x", "--local"], ["sync"], ["doctor"])
DEEP = {
    "a 5,000-deep array": "exclude_projects = " + "[" * 5000 + "]" * 5000 + "\n",
    "a 5,000-deep inline table": "exclude_projects = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n",
}


def plant(text):
    paths.ensure_private_dir(paths.config_dir())
    with open(paths.config_path(), "w") as fh:
        fh.write(text)


def one_error_line(args):
    proc = subprocess.run([*CHATS, *args], capture_output=True, text=True, timeout=120)
    out = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert "Traceback" not in proc.stderr, (args, proc.stderr[-1500:])
    assert proc.returncode != 0 and out, (args, proc.returncode, out)
    errors = [line for line in out if paths.config_path() in line]
    assert errors, (args, out)
    return errors[0]


@pytest.mark.parametrize("what", list(DEEP))
def test_a_deeply_nested_config_is_one_line_for_every_command(what):
    plant(DEEP[what])
    for args in COMMANDS:
        assert "nest too deep" in one_error_line(args), args
    with open(paths.config_path()) as fh:
        assert fh.read() == DEEP[what]   # config set wrote nothing over it


def test_a_fifo_as_the_config_file_is_one_line_and_no_hang():
    paths.ensure_private_dir(paths.config_dir())
    os.mkfifo(paths.config_path())
    for args in COMMANDS:
        assert "not a regular file" in one_error_line(args), args


def test_the_hook_under_a_deeply_nested_config_exits_0_and_logs(tmp_path):
    plant(DEEP["a 5,000-deep array"])
    transcript = tmp_path / "s1.jsonl"
    transcript.write_bytes(lines.encode(lines.user("hello", session="s1")))
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        out = hook_event(transcript, event, session="s1", prompt="hello")
        assert out == b"" or out.startswith(b"{"), out
    assert any("nest too deep" in str(entry) for entry in hook_log()), hook_log()
