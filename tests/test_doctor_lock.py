"""`chats doctor` while another process holds the journal's write lock: it says that process holds it
(and which one, from the sync lock or the kernel's lock table) instead of waiting out the busy timeout
and blaming the folder's permissions."""

import json
import subprocess
import sys

from claude_chats import paths
from claude_chats.localstore import db
from tests.support.hooks import CHATS

HOLDER = """
import sys, apsw
from claude_chats.sync.lock import SyncLock
if sys.argv[2] == "sync":
    SyncLock().acquire()
conn = apsw.Connection(sys.argv[1])
conn.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.read()            # until the test closes stdin
"""


def holding(kind):
    db.connect(paths.journal_path()).close()       # a migrated journal
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, paths.journal_path(), kind], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def journal_check():
    out = subprocess.run([*CHATS, "doctor", "--json"], capture_output=True, text=True, timeout=120)
    return next(c for c in json.loads(out.stdout) if c["name"] == "journal")


def check_while_held(kind):
    """``(doctor's journal check while a process holds the write lock, that process's pid)``."""
    proc = holding(kind)
    try:
        return journal_check(), proc.pid
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def test_doctor_names_the_process_that_holds_the_write_lock():
    check, pid = check_while_held("plain")
    assert check["status"] == "warn", check
    assert f"write lock is held by another process (pid {pid}: python" in check["detail"]
    assert "permissions" not in check["fix"] and "run `chats doctor` again" in check["fix"]
    assert journal_check()["status"] == "pass"        # free again: writable


def test_doctor_says_a_running_sync_holds_it():
    check, pid = check_while_held("sync")
    assert check["status"] == "warn", check
    assert f"held by a running `chats sync` (pid {pid})" in check["detail"]
