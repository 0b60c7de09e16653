"""Where claude-chats keeps its state: journal, config, logs.

Stdlib only, because the hook imports it. The locations are the ones
``platformdirs`` gives for the app name ``claude-chats`` (a test checks they
agree); ``CLAUDE_CHATS_HOME`` relocates all of them under one folder.
"""

import os
import stat
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


def check_folders():
    """ConfigError when a folder of claude-chats' state cannot be one: ``CLAUDE_CHATS_HOME`` (or an
    XDG variable) names a file, or a path below a file. Three stats; the CLI checks once per command."""
    for folder in dict.fromkeys((data_dir(), config_dir(), log_dir())):
        existing = folder
        while not os.path.lexists(existing) and os.path.dirname(existing) != existing:
            existing = os.path.dirname(existing)
        if not os.path.isdir(existing):
            where = "CLAUDE_CHATS_HOME" if _home_override() else "XDG_DATA_HOME, XDG_CONFIG_HOME or XDG_STATE_HOME"
            from .errors import ConfigError  # here: errors is off the hook's path
            raise ConfigError(f"claude-chats keeps its state in {folder}, but {existing} is not a folder: "
                              f"point {where} at a folder (it is created when missing)")


def read_regular(path, limit, follow=True):
    """The bytes of the regular file ``path``, at most ``limit`` of them; ``OSError`` otherwise.

    Opened with ``O_NONBLOCK`` (a FIFO opens at once instead of waiting for a writer) and checked with
    ``fstat`` before any read: a FIFO, a device or a folder is refused, so no read blocks or never
    ends; a file over ``limit`` bytes is refused. ``follow=False`` refuses a symbolic link too
    (``ELOOP``). ``FileNotFoundError`` when there is nothing there."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file", path)
        data = os.read(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise OSError(0, f"larger than {limit:,} bytes", path)
    return data

