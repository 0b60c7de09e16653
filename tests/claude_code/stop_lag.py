"""A Stop hook that measures how long after the hook started Claude Code writes
the turn's final assistant line (``last_assistant_message``) to the transcript.

    python3 -S stop_lag.py LOG_JSONL

Polls the transcript every 5 ms for up to 5 s; appends one JSON line per run:
``{"lag_ms": N | null, "at_start": bool, "session_id": ...}``. Stdlib only,
exits 0, prints nothing.
"""

import json
import sys
import time


def _has(path, needle):
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return False
    for raw in data.split(b"\n")[:-1]:
        if b'"assistant"' not in raw:
            continue
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if rec.get("type") != "assistant":
            continue
        for block in (rec.get("message") or {}).get("content") or []:
            if isinstance(block, dict) and block.get("type") == "text" and needle in block.get("text", ""):
                return True
    return False


def main():
    t0 = time.monotonic()
    payload = json.loads(sys.stdin.read() or "{}")
    needle = (payload.get("last_assistant_message") or "").strip()
    path = payload.get("transcript_path")
    lag = None
    at_start = _has(path, needle) if needle else None
    if at_start:
        lag = 0.0
    elif needle:
        while time.monotonic() - t0 < 5:
            time.sleep(0.005)
            if _has(path, needle):
                lag = (time.monotonic() - t0) * 1000
                break
    with open(sys.argv[1], "a") as fh:
        fh.write(json.dumps({"session_id": payload.get("session_id"), "at_start": at_start,
                             "lag_ms": None if lag is None else round(lag, 1)}) + "\n")


if __name__ == "__main__":
    try:
        main()
    except Exception as exc:
        sys.stderr.write(f"stop_lag: {exc!r}\n")
    sys.exit(0)
