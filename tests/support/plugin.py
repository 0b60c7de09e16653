"""A plugin install of claude-chats, laid out the way ``claude plugin install`` does it (2.1.332)."""

import json
import os
import pathlib
import shutil
import stat

from claude_chats import install, paths
from tests.support import ROOT

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


def commands_on_path(tmp_path, monkeypatch):
    """record-conversation and chats on PATH, as `uv tool install claude-chats` puts them."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("record-conversation", "chats"):
        (folder / name).write_text("#!/bin/sh\nexit 0\n")
        (folder / name).chmod(stat.S_IRWXU)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
