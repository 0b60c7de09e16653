"""Starting ``chats sync`` in the background from the hook.

Stdlib only and cheap: the hook calls ``maybe_start`` on every turn. It
starts ``python -m claude_chats.sync --background`` (its own session, no
inherited stdio, nice'd by the child itself) when messages are pending, no
sync holds the lock, and the last start is at least ``sync_interval`` seconds
old (0 turns background sync off). The common case costs a stat or two. An interval that
cannot be read raises ``ConfigError``, which the hook logs.
"""

import os
import sys
import time

from .. import paths
from ..localstore import db
from ..times import seconds

STAMP_NAME = "sync.started"
MIN_INTERVAL = 30   # below this age of the last start the configured interval is not even read


def stamp_path():
    return os.path.join(paths.data_dir(), STAMP_NAME)


def maybe_start(conn=None, interval=None, now=None):
    """Start a background sync if one is due; returns True when one was started.

    ``conn``: the journal's apsw connection, to check that messages are pending
    (None: assume they are). ``interval``: seconds between starts (None: the
    ``sync_interval`` setting, read only when the last start is old enough).
    """
    now = time.time() if now is None else now
    age = now - _last_start()
    if age < min(MIN_INTERVAL, interval if interval is not None else MIN_INTERVAL):
        return False
    if interval is None:
        interval = configured_interval()
    if interval <= 0 or age < interval:
        return False
    if conn is not None and not db.has_pending(conn):
        return False
    from .lock import is_locked   # here: fcntl's import (about 0.2 ms) is paid only when a sync is due

    if is_locked():
        return False
    _touch(stamp_path(), now)
    spawn()
    return True


def configured_interval():
    """``sync_interval`` in seconds, parsed as ``chats config show`` parses it (``times.seconds``).

    A value that cannot be read is a ``ConfigError`` (the hook logs it), not a silent 0.
    """
    # The environment wins over the config file anyway: reading it first spares
    # the hook the config module and tomllib.
    env = os.environ.get("CLAUDE_CHATS_SYNC_INTERVAL", "").strip()
    if env:
        try:
            return seconds(env)
        except ValueError as exc:
            from ..errors import ConfigError  # here: errors is off the hook's path
            raise ConfigError(f"sync_interval from $CLAUDE_CHATS_SYNC_INTERVAL: {env!r} is not a valid "
                              f"duration: {exc}; the hook starts no background sync until it is fixed") from None
    from .. import config

    return config.load(validate=False).sync_interval or 0


def command():
    """The background sync command line."""
    return [sys.executable, "-m", "claude_chats.sync", "--background"]


def spawn(argv=None, data=None):
    """Start ``argv`` (the background sync's ``command()`` by default) detached: a new session, stdout and
    stderr on /dev/null, stdin on /dev/null or, given ``data`` (bytes), a pipe that is written it and closed
    (the hook's hand-over: ``hook.hand_over``). Its pid."""
    devnull = os.devnull
    argv = argv or command()
    if data is None:
        actions = [(os.POSIX_SPAWN_OPEN, fd, devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
        return os.posix_spawn(argv[0], argv, dict(os.environ), file_actions=actions, setsid=True)
    read, write = os.pipe()
    try:
        actions = [(os.POSIX_SPAWN_DUP2, read, 0), (os.POSIX_SPAWN_CLOSE, write)] + \
                  [(os.POSIX_SPAWN_OPEN, fd, devnull, os.O_RDWR, 0) for fd in (1, 2)]
        pid = os.posix_spawn(argv[0], argv, dict(os.environ), file_actions=actions, setsid=True)
    finally:
        os.close(read)
    with os.fdopen(write, "wb") as pipe:
        pipe.write(data)
    return pid


def _last_start():
    try:
        return os.stat(stamp_path()).st_mtime
    except OSError:
        return 0.0


def _touch(path, now):
    paths.ensure_private_dir(os.path.dirname(path))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.close(fd)
    os.utime(path, (now, now))
