"""``python -m claude_chats.sync [--background]``: the job the hook and the schedule start.

``--background`` lowers the priority, writes nothing to stdout and logs one
JSON line per run to ``sync.log`` in the log dir. Exit 0 when the sync
succeeded or another one is running, 1 otherwise.
"""

import json
import os
import sys
import time

from .. import paths

LOG_NAME = "sync.log"
MAX_LOG_BYTES = 1 << 20
NICE = 10


def log(entry):
    folder = paths.ensure_private_dir(paths.log_dir())
    path = os.path.join(folder, LOG_NAME)
    if os.path.exists(path) and os.path.getsize(path) > MAX_LOG_BYTES:
        os.replace(path, path + ".1")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **entry}) + "\n")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    background = "--background" in argv
    if background and hasattr(os, "nice"):
        os.nice(NICE)
    from ..errors import ClaudeChatsError, SyncLocked
    from .runner import run_sync, terminate_as_interrupt

    try:
        with terminate_as_interrupt():
            report = run_sync()
    except KeyboardInterrupt:
        log({"ok": False, "errors": ["interrupted (the run is recorded in the journal)"]})
        return 1
    except SyncLocked as exc:
        log({"skipped": str(exc)})
        return 0
    except ClaudeChatsError as exc:
        log({"ok": False, "errors": [str(exc)]})
        return 1
    except Exception as exc:  # noqa: BLE001 - a background job has nobody else to tell
        log({"ok": False, "errors": [f"{type(exc).__name__}: {exc}"]})
        return 1
    log(report.as_dict())
    if not background:
        print(json.dumps(report.as_dict()))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
