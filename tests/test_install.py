"""`chats install` / `chats uninstall` against a temporary Claude home with a realistic settings.json."""

import json
import os
import stat
import subprocess

import pytest

from claude_chats import config, install, paths
from tests.support import lines
from tests.support.cli import chats

REALISTIC = {
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "model": "opus",
    "cleanupPeriodDays": 30,
    "env": {"BASH_DEFAULT_TIMEOUT_MS": "120000", "DISABLE_TELEMETRY": "1"},
    "permissions": {"allow": ["Bash(git status:*)", "Read(~/notes/**)"], "deny": ["Read(./.env)"],
                    "defaultMode": "acceptEdits"},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "~/.claude/hooks/guard-bash.sh", "timeout": 5}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "afplay /System/Library/Sounds/Glass.aiff"}]}],
        "SessionEnd": [{"matcher": "clear", "hooks": [
            {"type": "command", "command": "python3 ~/bin/summarise.py --quiet"}]}],
    },
    "statusLine": {"type": "command", "command": "~/.claude/statusline.sh"},
    "enabledPlugins": {"formatter@tools": True},
    "unknownFutureKey": [1, "two", {"three": None}],
}


@pytest.fixture
def no_claude(tmp_path, monkeypatch):
    """A PATH without the `claude` CLI."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


@pytest.fixture
def fake_claude(tmp_path, monkeypatch):
    """A `claude` executable on PATH that records its arguments (one JSON list per line)."""
    folder = tmp_path / "fake-bin"
    folder.mkdir()
    log = tmp_path / "claude-calls.jsonl"
    script = folder / "claude"
    script.write_text("#!/bin/sh\n"
                      f"python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' \"$@\" >> {log}\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}/usr/bin{os.pathsep}/bin")
    return log


@pytest.fixture
def settings_file(no_claude):
    path = paths.claude_config_dir() + "/settings.json"
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(REALISTIC, fh, indent=4)   # not our indentation: only the parsed content must survive
    return path


def read(path):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def backups(path):
    folder, name = os.path.split(path)
    return sorted(f for f in os.listdir(folder) if f.startswith(name + ".bak-"))


def test_install_adds_the_four_hooks_and_keeps_everything_else(settings_file):
    result = chats("install")
    assert result.exit_code == 0, result.output
    after = read(settings_file)
    hook = install.installed_script("record-conversation")
    assert os.path.isabs(hook) and os.access(hook, os.X_OK)
    for event in install.HOOK_EVENTS:
        ours = [h for g in after["hooks"][event] for h in g["hooks"] if install.is_ours(h)]
        assert ours == [{"type": "command", "command": hook, "timeout": install.HOOK_TIMEOUT}]
    assert install.without_hooks(after) == REALISTIC
    assert after["hooks"]["Stop"][0] == REALISTIC["hooks"]["Stop"][0]   # the other tool's Stop hook runs first still
    assert list(after) == list(REALISTIC)                                # key order kept
    assert len(backups(settings_file)) == 1
    backup = os.path.join(os.path.dirname(settings_file), backups(settings_file)[0])
    assert read(backup) == REALISTIC


def test_install_twice_changes_nothing_the_second_time(settings_file):
    chats("install")
    first = open(settings_file, "rb").read()
    result = chats("install")
    assert result.exit_code == 0
    assert "already up to date" in result.output
    assert open(settings_file, "rb").read() == first
    assert len(backups(settings_file)) == 1


def test_uninstall_restores_the_original_twice_in_a_row(settings_file):
    for _ in range(2):
        chats("install")
        assert chats("uninstall").exit_code == 0
        assert read(settings_file) == REALISTIC
    assert chats("uninstall").output.count("already up to date") == 1
    assert read(settings_file) == REALISTIC


def test_invalid_json_is_refused_untouched(settings_file):
    broken = b'{\n  "model": "opus",\n  "hooks": {,\n}\n'
    with open(settings_file, "wb") as fh:
        fh.write(broken)
    for args in (["install"], ["uninstall"], ["install", "--print"]):
        result = chats(*args)
        assert result.exit_code == 1
        assert "not valid JSON (line 3, column" in result.output and settings_file in result.output
        assert open(settings_file, "rb").read() == broken
    assert backups(settings_file) == []


@pytest.mark.parametrize("content, says", [
    ('["a list"]', "not an object"),
    ('{"hooks": []}', '"hooks" is not an object'),
    ('{"hooks": {"Stop": {"command": "x"}}}', 'is not a list of matcher objects'),
    ('{"hooks": {"Stop": [{"hooks": "record-conversation"}]}}', 'that is not a list'),
])
def test_unexpected_shapes_are_refused_untouched(settings_file, content, says):
    with open(settings_file, "w") as fh:
        fh.write(content)
    result = chats("install")
    assert result.exit_code == 1 and says in result.output
    assert open(settings_file).read() == content


def test_print_shows_the_change_and_changes_nothing(settings_file):
    before = open(settings_file, "rb").read()
    result = chats("install", "--print", "--provider", "ollama", "--database-url",
                   "postgresql://me:s3cret@db.example.com/chats?sslmode=verify-full")
    assert result.exit_code == 0
    hook = install.installed_script("record-conversation")
    assert any(line.startswith("+") and f'"command": "{hook}"' in line for line in result.output.splitlines())
    assert "claude mcp add --scope user conversation-memory --" in result.output
    assert "s3cret" not in result.output and "me:***@db.example.com" in result.output
    assert open(settings_file, "rb").read() == before
    assert not os.path.exists(paths.config_path())
    assert backups(settings_file) == []


def test_a_stale_entry_is_replaced_in_place_and_duplicates_removed(settings_file):
    data = json.loads(json.dumps(REALISTIC))
    data["hooks"]["Stop"][0]["hooks"].append(
        {"type": "command", "command": "/old/venv/bin/record-conversation", "timeout": 5})
    data["hooks"]["PreCompact"] = [{"hooks": [{"type": "command", "command": "record-conversation"}]},
                                   {"hooks": [{"type": "command", "command": "'/x y/record-conversation'"}]}]
    with open(settings_file, "w") as fh:
        json.dump(data, fh)
    chats("install")
    after = read(settings_file)
    hook = install.installed_script("record-conversation")
    assert after["hooks"]["Stop"][0]["hooks"][1]["command"] == hook     # same place as the stale one
    assert len(after["hooks"]["Stop"]) == 1
    assert after["hooks"]["PreCompact"] == [{"hooks": [install.hook_entry(hook)]}]
    chats("uninstall")
    assert read(settings_file) == REALISTIC


def test_missing_settings_file_is_created(no_claude):
    path = install.settings_path()
    os.remove(path) if os.path.exists(path) else None
    assert chats("install").exit_code == 0
    assert set(read(path)["hooks"]) == set(install.HOOK_EVENTS)
    assert backups(path) == []
    chats("uninstall")
    assert read(path) == {}


def test_a_symlinked_settings_file_stays_a_symlink(settings_file, tmp_path):
    real = tmp_path / "dotfiles" / "claude-settings.json"
    real.parent.mkdir()
    os.replace(settings_file, real)
    os.symlink(real, settings_file)
    os.chmod(real, 0o644)
    chats("install")
    assert os.path.islink(settings_file)
    assert "hooks" in read(real) and "Stop" in read(real)["hooks"]
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o644


def test_the_installed_hook_command_records_a_turn(settings_file, tmp_path):
    """Run the command exactly as written in settings.json, with a real hook payload."""
    chats("install")
    transcript = tmp_path / "claude" / "projects" / "-work" / "s-1.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes(lines.encode(lines.user("install test: remember the flux capacitor", session="s-1")))
    command = read(settings_file)["hooks"]["UserPromptSubmit"][-1]["hooks"][0]["command"]
    payload = {"session_id": "s-1", "transcript_path": str(transcript), "cwd": "/work",
               "hook_event_name": "UserPromptSubmit", "prompt": "remember the flux capacitor"}
    done = subprocess.run(command, shell=True, input=json.dumps(payload), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout == ""
    from claude_chats.localstore.journal import Journal
    with Journal.open() as journal:
        assert journal.counts()["messages"] == 1


def test_mcp_is_registered_with_the_claude_cli(settings_file, fake_claude):
    result = chats("install")
    assert result.exit_code == 0
    calls = [json.loads(line) for line in fake_claude.read_text().splitlines()]
    chats_path = install.installed_script("chats")
    assert calls == [["mcp", "remove", "--scope", "user", "conversation-memory"],
                     ["mcp", "add", "--scope", "user", "conversation-memory", "--", chats_path, "mcp"]]
    assert "ran: claude mcp add" in result.output
    chats("uninstall")
    calls = [json.loads(line) for line in fake_claude.read_text().splitlines()]
    assert calls[-1] == ["mcp", "remove", "--scope", "user", "conversation-memory"]


def test_without_the_claude_cli_the_exact_command_is_printed(settings_file):
    result = chats("install")
    chats_path = install.installed_script("chats")
    assert f"not on PATH; run: claude mcp add --scope user conversation-memory -- {chats_path} mcp" in result.output


def test_install_options_go_to_the_config_file(settings_file, monkeypatch):
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", "llama")
    monkeypatch.delenv("CLAUDE_CHATS_SYNC_INTERVAL")
    url = "postgresql://me:s3cret@localhost:5432/chats"
    result = chats("install", "--provider", "ollama", "--model", "nomic-embed-text", "--database-url", url,
                   "--schedule", "10m")
    assert result.exit_code == 0 and "s3cret" not in result.output
    assert "note: env CLAUDE_CHATS_PROVIDER overrides the config file's provider" in result.output
    monkeypatch.delenv("CLAUDE_CHATS_PROVIDER")
    settings = config.load()
    assert (settings.provider, settings.model, settings.database_url, settings.sync_interval) == \
        ("ollama", "nomic-embed-text", url, 600)
    assert {settings.source(k) for k in ("provider", "model", "database_url", "sync_interval")} == {"file"}
    assert stat.S_IMODE(os.stat(paths.config_path()).st_mode) == 0o600


def test_a_bad_option_changes_nothing(settings_file):
    before = open(settings_file, "rb").read()
    result = chats("install", "--provider", "nonsense")
    assert result.exit_code == 1 and "unknown embedding provider 'nonsense'" in result.output
    assert open(settings_file, "rb").read() == before
    assert not os.path.exists(paths.config_path())


def test_the_plugin_layout_matches_chats_install():
    """.claude-plugin/plugin.json, hooks/hooks.json and .mcp.json register what `chats install` does."""
    import pathlib
    import tomllib

    root = pathlib.Path(__file__).resolve().parent.parent
    manifest = json.loads((root / ".claude-plugin" / "plugin.json").read_text())
    with open(root / "pyproject.toml", "rb") as fh:
        assert manifest["version"] == tomllib.load(fh)["project"]["version"]
    marketplace = json.loads((root / ".claude-plugin" / "marketplace.json").read_text())
    assert [p["name"] for p in marketplace["plugins"]] == [manifest["name"]]
    hooks = json.loads((root / "hooks" / "hooks.json").read_text())["hooks"]
    assert list(hooks) == list(install.HOOK_EVENTS)
    assert install.our_hooks({"hooks": hooks}) == {e: ["record-conversation"] for e in install.HOOK_EVENTS}
    servers = json.loads((root / ".mcp.json").read_text())["mcpServers"]
    assert servers == {install.MCP_NAME: {"command": "chats", "args": ["mcp"]}}


# -- the embedding model (issue 14): a fresh machine gets one without a manual step -----------------


def test_install_without_any_model_here_makes_the_small_one_and_configures_it(settings_file):
    from claude_chats.models.llama import pulled_model_path

    result = chats("install")
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("model: "))
    assert "the default model mxbai-embed-large is not on this machine, nor any other" in line, line
    assert "made it and configured model = all-MiniLM-L6-v2" in line and "from the cache" in line, line
    settings = config.load()
    assert (settings.model, settings.source("model")) == ("all-MiniLM-L6-v2", "file")
    assert os.path.isfile(pulled_model_path("all-MiniLM-L6-v2"))
    status = json.loads(chats("status", "--json").output)["provider"]
    assert status["available"] and status["key"].startswith("llama/all-MiniLM-L6-v2/384/"), status
    again = chats("install").output
    assert "model: model all-MiniLM-L6-v2 is on this machine" in again, again


def test_install_configures_a_model_found_here_rather_than_make_one(settings_file, test_model_path):
    from claude_chats.models.llama import pulled_model_path

    os.makedirs(os.path.dirname(pulled_model_path("nomic-embed-text")))
    os.link(test_model_path, pulled_model_path("nomic-embed-text"))   # `chats models pull` put it there
    shown = chats("install", "--print").output
    assert "found nomic-embed-text" in shown and "would configure model = nomic-embed-text" in shown, shown
    assert not os.path.exists(paths.config_path())
    result = chats("install")
    assert "model: the default model mxbai-embed-large is not on this machine; found nomic-embed-text" in result.output
    assert config.load().model == "nomic-embed-text"
    assert not os.path.exists(pulled_model_path("all-MiniLM-L6-v2"))


def test_install_leaves_a_model_set_by_name_and_says_what_to_run(settings_file):
    result = chats("install", "--model", "nomic-embed-text")
    assert result.exit_code == 0
    assert "model: model nomic-embed-text (set in file) is not on this machine: run `chats models pull " \
           "nomic-embed-text`" in result.output, result.output
    assert config.load().model == "nomic-embed-text"
    assert "model:" not in chats("install", "--no-model").output


def test_models_setup_is_the_same_step_alone(test_model_path):
    assert "would make it" in chats("models", "setup", "--print").output
    assert not os.path.exists(paths.config_path())
    done = chats("models", "setup")
    assert done.exit_code == 0 and "configured model = all-MiniLM-L6-v2" in done.output
    assert "is on this machine" in chats("models", "setup").output
    config.write_values({"model": "nomic-embed-text"})
    missing = chats("models", "setup")
    assert missing.exit_code == 1 and "chats models pull nomic-embed-text" in missing.output
