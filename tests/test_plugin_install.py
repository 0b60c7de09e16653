"""A plugin install of claude-chats, as Claude Code 2.1.332 records it (issue 12 defects 7 and 8).

``claude plugin install conversation-memory@claude-chats`` enables the plugin in
settings.json (``enabledPlugins``) and records its installed copy in
``plugins/installed_plugins.json`` (``installPath``). doctor and status must see
the hooks and the MCP server it brings, and warn when ``chats install`` is active too.
"""

import json
import pathlib

from claude_chats import doctor, install
from tests.support import ROOT
from tests.support.cli import chats
from tests.support.plugin import KEY, commands_on_path, install_plugin


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
    commands_on_path(tmp_path, monkeypatch)
    copy = install_plugin(tmp_path)
    assert install.plugin_installs(json.loads(pathlib.Path(install.settings_path()).read_text())) == \
        [{"key": KEY, "path": str(copy), "hooks": sorted(install.HOOK_EVENTS), "mcp": True}]
    checks = {c.name: c for c in doctor.run()}
    assert checks["hooks"].status == doctor.PASS and KEY in checks["hooks"].detail
    assert checks["mcp"].status == doctor.PASS and KEY in checks["mcp"].detail
    out = chats("status", "--offline").output
    assert f"hooks registered by the {KEY} plugin" in out and "missing" not in out


def test_a_plugin_without_its_commands_on_path_fails_doctor(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    install_plugin(tmp_path)
    checks = {c.name: c for c in doctor.run()}
    assert checks["hooks"].status == doctor.FAIL and "not on PATH" in checks["hooks"].detail
    assert checks["mcp"].status == doctor.FAIL and "uv tool install claude-chats" in checks["mcp"].fix


def test_plugin_and_chats_install_both_active_is_a_warning(tmp_path, monkeypatch):
    commands_on_path(tmp_path, monkeypatch)
    chats("install")
    install_plugin(tmp_path)
    checks = {c.name: c for c in doctor.run()}
    assert checks["hooks"].status == doctor.WARN and "recorded twice" in checks["hooks"].detail
    out = chats("status", "--offline").output
    assert "keep one" in out
