"""What ``"current"`` means to the memory tools: the Claude Code session and project this server serves.

Claude Code 2.1.332 starts a stdio server with ``CLAUDE_CODE_SESSION_ID`` and
``CLAUDE_PROJECT_DIR`` in its environment, once. The session id goes stale:
``/clear`` and ``/resume`` switch the session without restarting the server,
and ``claude --continue`` starts it under a provisional id that is never
written. Claude Code's own pid file, ``<claude config dir>/sessions/<pid>.json``
(``sessionId``, ``cwd``, ``procStart``), follows the switch; the server's
parent is that process. So: the pid file of the parent, else the environment
(observed with the real CLI: tests/claude_code/test_memory_reach.py).
"""

import errno
import json
import os

from .. import paths
from ..errors import SearchError

CURRENT = "current"


def session_id(value, environ=None, parent=None):
    """``value``, or the session this server serves when ``value`` is ``"current"``."""
    if value != CURRENT:
        return value
    found = _pid_file(parent).get("sessionId") or (environ or os.environ).get("CLAUDE_CODE_SESSION_ID")
    if not found:
        raise SearchError('session_id="current" names the Claude Code session that started this server, and '
                          "none did (no CLAUDE_CODE_SESSION_ID): pass a session id from list_recent_sessions")
    return found


def project_path(value, environ=None, parent=None):
    """``value``, or the project folder of this server's Claude Code session when ``value`` is ``"current"``."""
    if value != CURRENT:
        return value
    found = (environ or os.environ).get("CLAUDE_PROJECT_DIR") or _pid_file(parent).get("cwd")
    if not found:
        raise SearchError('project_path="current" names the project of the Claude Code session that started '
                          "this server, and none did (no CLAUDE_PROJECT_DIR): pass an absolute folder")
    return found


PID_FILE_BYTES = 64 * 1024   # Claude Code's pid file is a few hundred bytes; more is not its file
_FIELD_CHARS = {"sessionId": 200, "cwd": 4096}


def _pid_file(parent=None):
    """Claude Code's record of the process that started this server, or {} (not Claude Code, or gone).

    Hostile input: anything may sit at that path. A symlink, a FIFO, a device or a file larger than
    ``PID_FILE_BYTES`` is refused with a ``SearchError`` (no read blocks, none is unbounded); a file
    that is not JSON yet (Claude Code writing it) is ignored; a ``sessionId`` or ``cwd`` holding a
    control character (NUL, a newline) is refused."""
    pid = parent or os.getppid()
    path = os.path.join(paths.claude_config_dir(), "sessions", f"{pid}.json")
    try:
        data = paths.read_regular(path, PID_FILE_BYTES, follow=False)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise _refused(path, "a symbolic link" if exc.errno == errno.ELOOP else exc.strerror or str(exc)) from None
    try:
        record = json.loads(data)
    except ValueError:
        return {}
    if not isinstance(record, dict) or record.get("pid") != pid:
        return {}
    found = {k: v for k, v in record.items() if k in _FIELD_CHARS and isinstance(v, str) and v}
    for key, value in found.items():
        if len(value) > _FIELD_CHARS[key] or any(c < " " or "\x7f" <= c <= "\x9f" for c in value):
            raise _refused(path, f"its {key} holds control characters or is over {_FIELD_CHARS[key]} characters")
    return found


def _refused(path, why):
    return SearchError(f'"current" is read from Claude Code\'s pid file {path}, which is refused ({why}): '
                       "pass a session id from list_recent_sessions or an absolute project folder")
