"""Building Claude Code transcript lines for tests (the shapes FORMAT.md describes)."""

import json
import uuid as uuidlib


def user(text, session="sess-1", uid=None, ts="2026-01-01T00:00:00.000Z", cwd="/work/proj", **extra):
    obj = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": session,
           "version": "2.1.0", "gitBranch": "main", "type": "user", "message": {"role": "user", "content": text},
           "uuid": uid or str(uuidlib.uuid4()), "timestamp": ts}
    obj.update(extra)
    return obj


def assistant(blocks, session="sess-1", uid=None, message_id=None, ts="2026-01-01T00:00:01.000Z", **extra):
    if isinstance(blocks, str):
        blocks = [{"type": "text", "text": blocks}]
    obj = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/work/proj",
           "sessionId": session, "version": "2.1.0", "gitBranch": "main", "type": "assistant",
           "message": {"id": message_id or f"msg_{uuidlib.uuid4().hex[:12]}", "type": "message",
                       "role": "assistant", "model": "claude-sonnet-4-5", "content": blocks},
           "uuid": uid or str(uuidlib.uuid4()), "timestamp": ts}
    obj.update(extra)
    return obj


def encode(*objs):
    return b"".join(json.dumps(o).encode() + b"\n" for o in objs)


def conversation(n, session="sess-1", prefix="turn"):
    """``n`` alternating user/assistant lines with distinct, searchable text."""
    out = []
    for i in range(n):
        text = f"{prefix} {i} of {session}: the quick brown fox number {i}"
        out.append(user(text, session=session) if i % 2 == 0 else assistant(text, session=session))
    return out
