"""A plugin install of claude-chats, as Claude Code 2.1.332 records it (issue 12 defects 7 and 8).

``claude plugin install conversation-memory@claude-chats`` enables the plugin in
settings.json (``enabledPlugins``) and records its installed copy in
``plugins/installed_plugins.json`` (``installPath``). doctor and status must see
the hooks and the MCP server it brings, and warn when ``chats install`` is active too.
"""

import json
import os
import pathlib
import shutil
import stat

from click.testing import CliRunner

from claude_chats import doctor, install, paths
from claude_chats.cli import main

ROOT = pathlib.Path(__file__).resolve().parent.parent
KEY = "conversation-memory@claude-chats"


def install_plugin(tmp_path):
    """Lay the plugin out the way `claude plugin install` does: a copy in the cache, two records."""
    copy = pathlib.Path(paths.claude_config_dir()) / "plugins" / "cache" / "claude-chats" / "conversation-memory" / "0.1.0"
    for part in (".claude-plugin", "hooks"):
        shutil.copytree(ROOT / part, copy / part)
    shutil.copy(ROOT / ".mcp.json", copy / ".mcp.json")
    record = {"version": 2, "plugins": {KEY: [{"scope": "user", "installPath": str(copy), "version": "0.1.0"}]}}
    installed = pathlib.Path(install.installed_plugins_path())
    installed.parent.mkdir(parents=True, exist_ok=True)
    installed.write_text(json.dumps(record))
    settings = pathlib.Path(install.settings_path())
    data = json.loads(settings.read_text()) if settings.exists() else {}
    settings.write_text(json.dumps({**data, "enabledPlugins": {KEY: True}}))
    return copy


def on_path(tmp_path, monkeypatch):
    """record-conversation and chats on PATH, as `uv tool install claude-chats` puts them."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("record-conversation", "chats"):
        (folder / name).write_text("#!/bin/sh\nexit 0\n")
        (folder / name).chmod(stat.S_IRWXU)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")


def test_the_plugin_manifest_has_a_name_claude_code_accepts():
    manifest = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    for name in (manifest["name"], market["plugins"][0]["name"]):
        assert name == install.PLUGIN_NAME
        assert not name.startswith(("claude-", "anthropic-", "anthropics-", "cc-plugin-"))
    assert manifest.get("author") and market.get("description")
    assert (ROOT / manifest["icon"]).read_bytes().startswith(b"\x89PNG")
    hooks = json.loads((ROOT / "hooks" / "hooks.json").read_text())["hooks"]
    assert list(hooks) == list(install.HOOK_EVENTS)


def test_a_plugin_install_is_seen_by_doctor_and_status(tmp_path, monkeypatch):
    on_path(tmp_path, monkeypatch)
    copy = install_plugin(tmp_path)
    assert install.plugin_installs(json.loads(pathlib.Path(install.settings_path()).read_text())) == \
        [{"key": KEY, "path": str(copy), "hooks": sorted(install.HOOK_EVENTS), "mcp": True}]
    checks = {c.name: c for c in doctor.run()}
    assert checks["hooks"].status == doctor.PASS and KEY in checks["hooks"].detail
    assert checks["mcp"].status == doctor.PASS and KEY in checks["mcp"].detail
    out = CliRunner().invoke(main, ["status", "--offline"], catch_exceptions=False).output
    assert f"hooks registered by the {KEY} plugin" in out and "missing" not in out


def test_a_plugin_without_its_commands_on_path_fails_doctor(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    install_plugin(tmp_path)
    checks = {c.name: c for c in doctor.run()}
    assert checks["hooks"].status == doctor.FAIL and "not on PATH" in checks["hooks"].detail
    assert checks["mcp"].status == doctor.FAIL and "uv tool install claude-chats" in checks["mcp"].fix


def test_plugin_and_chats_install_both_active_is_a_warning(tmp_path, monkeypatch):
    on_path(tmp_path, monkeypatch)
    CliRunner().invoke(main, ["install"], catch_exceptions=False)
    install_plugin(tmp_path)
    checks = {c.name: c for c in doctor.run()}
    assert checks["hooks"].status == doctor.WARN and "recorded twice" in checks["hooks"].detail
    out = CliRunner().invoke(main, ["status", "--offline"], catch_exceptions=False).output
    assert "keep one" in out
