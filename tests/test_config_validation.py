"""Values from the config file and the environment are checked like command-line ones (issue 16, item 12).

Through the CLI, as a person meets them: `chats config show` refuses a bad value in one line naming
the file (or variable), the key, the value and what is allowed; `chats doctor` fails the config
check with the fix; `chats config set` refuses the same value before writing anything.
"""

import json
import os

import pytest
from click.testing import CliRunner

from claude_chats import paths
from claude_chats.cli import main


def chats(*args, env=None):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def write_config(text):
    paths.ensure_private_dir(paths.config_dir())
    with open(paths.config_path(), "w", encoding="utf-8") as fh:
        fh.write(text)


def one_error_line(result):
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert "Traceback" not in result.output
    return lines[0]


def doctor_config():
    result = chats("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(result.output)}
    return result, checks["config"]


BAD_FILE_VALUES = [
    ('provider = 5\n', "provider", "5", "string"),
    ('model = ["a", "b"]\n', "model", "['a', 'b']", "string"),
    ('dimensions = 1.7\n', "dimensions", "1.7", "integer"),
    ('threads = true\n', "threads", "True", "integer"),
    ('threads = -3\n', "threads", "-3", "positive"),
    ('sync_interval = "0.001s"\n', "sync_interval", "0.001s", "less than a second"),
    ('provider = "nonsense"\n', "provider", "nonsense", "choose one of"),
    ('redact = "maybe"\n', "redact", "maybe", "boolean"),
]


@pytest.mark.parametrize("text, key, value, allowed", BAD_FILE_VALUES, ids=[v[1] + ":" + v[2] for v in BAD_FILE_VALUES])
def test_a_bad_value_in_the_file_is_a_one_line_error_naming_file_key_value(text, key, value, allowed, monkeypatch):
    monkeypatch.delenv("CLAUDE_CHATS_SYNC_INTERVAL")   # the test fixture's; here the file speaks
    write_config(text)
    line = one_error_line(chats("config", "show"))
    assert paths.config_path() in line and key in line and value in line and allowed in line, line
    result, check = doctor_config()
    assert result.exit_code == 1 and check["status"] == "fail" and key in check["detail"] and check["fix"]


def test_a_misspelled_key_is_refused_with_the_nearest_key_and_a_way_out():
    write_config('databse_url = "postgresql://me:Hunter2pw@db.example.com/chats?sslmode=require"\n')
    line = one_error_line(chats("config", "show"))
    assert "databse_url" in line and "database_url" in line and paths.config_path() in line
    assert "Hunter2pw" not in line and "me:***@db.example.com" in line          # the value, masked
    result, check = doctor_config()
    assert check["status"] == "fail" and "did you mean database_url" in check["detail"]
    assert "Hunter2pw" not in result.output
    assert chats("config", "unset", "databse_url").exit_code == 0              # the way out it names
    assert chats("config", "show").exit_code == 0
    assert doctor_config()[1]["status"] == "pass"


BAD_ENV_VALUES = [
    ("CLAUDE_CHATS_THREADS", "-3", "positive"),
    ("CLAUDE_CHATS_PROVIDER", "5", "choose one of"),
    ("CLAUDE_CHATS_SYNC_INTERVAL", "0.001s", "less than a second"),
]


@pytest.mark.parametrize("variable, value, allowed", BAD_ENV_VALUES, ids=[f"{v[0]}={v[1]}" for v in BAD_ENV_VALUES])
def test_a_bad_value_in_the_environment_is_a_one_line_error_naming_the_variable(variable, value, allowed):
    line = one_error_line(chats("config", "show", env={variable: value}))
    assert f"${variable}" in line and value in line and allowed in line, line


def test_config_set_refuses_a_duration_that_would_round_to_off_before_writing():
    line = one_error_line(chats("config", "set", "sync_interval", "0.001s"))
    assert "less than a second" in line
    assert not os.path.exists(paths.config_path())
