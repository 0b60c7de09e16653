"""Where claude-chats keeps its state: journal, config, logs.

Stdlib only, because the hook imports it. The locations are the ones
``platformdirs`` gives for the app name ``claude-chats`` (a test checks they
agree); ``CLAUDE_CHATS_HOME`` relocates all of them under one folder.
"""

import os
import sys

APP = "claude-chats"


def _home_override():
    home = os.environ.get("CLAUDE_CHATS_HOME")
    return os.path.abspath(os.path.expanduser(home)) if home else None


def _xdg(var, default):
    value = os.environ.get(var, "").strip()
    return value if value else os.path.expanduser(default)


def data_dir():
    """Folder of the journal (``journal.db``) and the sync lock."""
    home = _home_override()
    if home:
        return home
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Application Support/" + APP)
    return os.path.join(_xdg("XDG_DATA_HOME", "~/.local/share"), APP)


def config_dir():
    """Folder of ``config.toml``."""
    home = _home_override()
    if home:
        return home
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Application Support/" + APP)
    return os.path.join(_xdg("XDG_CONFIG_HOME", "~/.config"), APP)


def log_dir():
    """Folder of ``hook.log`` and ``sync.log``."""
    home = _home_override()
    if home:
        return os.path.join(home, "logs")
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Logs/" + APP)
    return os.path.join(_xdg("XDG_STATE_HOME", "~/.local/state"), APP, "log")


def journal_path():
    return os.path.join(data_dir(), "journal.db")


def config_path():
    return os.path.join(config_dir(), "config.toml")


def claude_config_dir():
    """Claude Code's own folder (``CLAUDE_CONFIG_DIR`` or ``~/.claude``)."""
    value = os.environ.get("CLAUDE_CONFIG_DIR")
    return os.path.abspath(os.path.expanduser(value)) if value else os.path.expanduser("~/.claude")


def claude_projects_dir():
    return os.path.join(claude_config_dir(), "projects")


def ensure_private_dir(path):
    """Create ``path`` (and parents) readable by the owner only."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path
