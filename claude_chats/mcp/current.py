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


def _pid_file(parent=None):
    """Claude Code's record of the process that started this server, or {} (not Claude Code, or gone)."""
    pid = parent or os.getppid()
    try:
        with open(os.path.join(paths.claude_config_dir(), "sessions", f"{pid}.json"), encoding="utf-8") as fh:
            record = json.load(fh)
    except (OSError, ValueError):
        return {}
    if not isinstance(record, dict) or record.get("pid") != pid:
        return {}
    return {k: v for k, v in record.items() if k in ("sessionId", "cwd") and isinstance(v, str) and v}
