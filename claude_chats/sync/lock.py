"""One sync at a time: an exclusive ``flock`` on ``<data dir>/sync.lock``.

The kernel releases the lock when its holder dies (kill -9 included), so a
crashed sync never blocks the next one. Stdlib only: the hook checks it.
"""

import fcntl
import os

from .. import paths

LOCK_NAME = "sync.lock"


def lock_path():
    return os.path.join(paths.data_dir(), LOCK_NAME)


class SyncLock:
    """``with SyncLock():`` holds the lock or raises ``SyncLocked`` at once."""

    def __init__(self, path=None):
        self.path = path or lock_path()
        self._fd = None

    def acquire(self):
        paths.ensure_private_dir(os.path.dirname(self.path))
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            from ..errors import SyncLocked  # here: errors is off the hook's path
            raise SyncLocked(f"another `chats sync` is running (pid {holder(self.path)}); "
                             "it will push what is pending, nothing to do") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        return self

    def release(self):
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


def is_locked(path=None):
    """Whether a sync holds the lock now (cheap: one open and one flock)."""
    path = path or lock_path()
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def holder(path=None):
    """The pid the sync lock's holder wrote (a string; "unknown" when there is none)."""
    path = path or lock_path()
    try:
        with open(path, encoding="ascii") as fh:
            return fh.read().strip() or "unknown"
    except OSError:
        return "unknown"
