"""The disk full and the journal read-only: the hook exits 0 and logs, nothing is half-written, the next run
stores everything exactly once.

Disk full two ways: SQLite's own limit (``PRAGMA max_page_count``) on the real
writer in-process, and a file-size limit (``RLIMIT_FSIZE``, SIGXFSZ ignored so
writes fail with EFBIG as they would with ENOSPC) on the hook and ``chats
import`` as processes. Read-only: the journal's file and folder write-protected;
as root, whom permissions do not stop, the hook runs without the capabilities that let
root ignore them.
"""

import json
import os
import resource
import signal
import stat
import subprocess
import sys

import apsw
import pytest

from claude_chats import paths
from claude_chats.localstore import db, writer
from claude_chats.localstore.journal import Journal
from tests.support.fuzzing import check_journal
from tests.support.hooks import CHATS, HOOK, Transcripts, hook_log, hook_payload


def cursor(path, transcript):
    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = conn.execute("SELECT offset FROM transcripts WHERE path = ?", (str(transcript),)).fetchall()
        return rows[0][0] if rows else None
    finally:
        conn.close()


def run(argv, data=None, preexec_fn=None, env=None):
    proc = subprocess.run(argv, input=data, capture_output=True, timeout=120, preexec_fn=preexec_fn, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def test_sqlite_full_rolls_the_chunk_back_whole(tmp_path):
    """The real writer against a journal that cannot grow: the error surfaces, nothing of the chunk stays."""
    transcripts = Transcripts(tmp_path / "projects", sessions=1, agents=0)
    transcripts.grow(50)
    path = str(tmp_path / "journal.db")
    transcript = transcripts.files[("sess-0", None)]
    with Journal.open(path) as journal:
        journal.import_files([str(transcript)])
    before, offset = check_journal(path), cursor(path, transcript)
    transcripts.grow(2000)
    conn = db.connect(path)
    pages = conn.execute("PRAGMA page_count").fetchall()[0][0]
    conn.execute(f"PRAGMA max_page_count = {pages + 2}")
    with pytest.raises(apsw.FullError):
        writer.ingest_file(conn, str(transcript))
    assert check_journal(path, before) == before and cursor(path, transcript) == offset
    with Journal(conn, path) as journal:              # import reports it as one error line, raises nothing
        stats = journal.import_files([str(transcript)])
        assert len(stats.errors) == 1 and "\n" not in stats.errors[0] and "full" in stats.errors[0].lower()
        conn.execute("PRAGMA max_page_count = 1073741823")
        journal.import_files([str(transcript)])
    assert set(check_journal(path, before)) == transcripts.uuids()


def _file_size_limit(limit):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # EFBIG from write(), as ENOSPC would be, not a kill
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def _journal_files_limit():
    sizes = [os.path.getsize(paths.journal_path() + suffix) for suffix in ("", "-wal", "-shm")
             if os.path.exists(paths.journal_path() + suffix)]
    return max(sizes) + 4096


def test_disk_full_hook_exits_zero_logs_and_writes_nothing_half(tmp_path):
    transcripts = Transcripts(tmp_path / "projects", sessions=1, agents=1)
    transcripts.grow(20)
    payload = hook_payload(transcripts, "sess-0")
    run(HOOK, payload)
    before = check_journal(paths.journal_path())
    transcripts.grow(3000)                                   # megabytes to write, kilobytes of room
    proc = run(HOOK, payload, preexec_fn=_file_size_limit(_journal_files_limit()))
    assert proc.stdout == b""
    assert check_journal(paths.journal_path(), before) == before
    errors = [e["error"] for e in hook_log()]
    assert errors and any(w in errors[-1].lower() for w in ("full", "disk", "i/o", "large")), errors
    run(HOOK, payload)                                        # room again: everything, exactly once
    assert set(check_journal(paths.journal_path(), before)) == transcripts.uuids()


def test_disk_full_import_reports_one_line_errors_then_completes(tmp_path):
    transcripts = Transcripts(tmp_path / "projects", sessions=3, agents=1)
    transcripts.grow(20)
    run(CHATS + ["import", str(transcripts.root)])
    before = check_journal(paths.journal_path())
    transcripts.grow(1500)
    proc = run(CHATS + ["import", str(transcripts.root), "--json"], preexec_fn=_file_size_limit(_journal_files_limit()))
    summary = json.loads(proc.stdout)
    assert summary["errors"] and all("\n" not in e for e in summary["errors"])
    rows = check_journal(paths.journal_path(), before)
    assert set(rows) <= transcripts.uuids()
    run(CHATS + ["import", str(transcripts.root)])
    assert set(check_journal(paths.journal_path(), rows)) == transcripts.uuids()


# -- read-only ------------------------------------------------------------------------------

def _without_dac_override():
    """In the child: drop the capabilities that let root ignore file permissions (from the bounding set,
    so the exec'd program does not get them back)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):   # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:   # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _protect(home, mode):
    for name in os.listdir(home):
        full = os.path.join(home, name)
        if os.path.isfile(full):
            os.chmod(full, mode)
    os.chmod(home, 0o500 if mode == 0o400 else 0o700)


def test_read_only_journal_hook_exits_zero_logs_and_changes_nothing(tmp_path):
    preexec = _without_dac_override if os.getuid() == 0 else None
    transcripts = Transcripts(tmp_path / "projects", sessions=1, agents=1)
    transcripts.grow(20)
    payload = hook_payload(transcripts, "sess-0")
    run(HOOK, payload)
    before = check_journal(paths.journal_path())
    transcripts.grow(100)
    home = paths.data_dir()
    os.makedirs(paths.log_dir(), mode=0o700, exist_ok=True)
    _protect(home, 0o400)            # the journal, its WAL and folder read-only; the log folder is not
    try:
        probe = subprocess.run([sys.executable, "-c", f"open({paths.journal_path()!r}, 'ab')"],
                               capture_output=True, preexec_fn=preexec)
        if probe.returncode == 0:
            pytest.skip("cannot make the journal read-only for this user")
        proc = run(HOOK, payload, preexec_fn=preexec)
        assert proc.stdout == b""
        imported = subprocess.run(CHATS + ["import", str(transcripts.root), "--json"], capture_output=True,
                                  text=True, timeout=120, preexec_fn=preexec)
        assert "Traceback" not in imported.stderr, imported.stderr
        if imported.returncode == 0:
            assert json.loads(imported.stdout)["errors"]
        else:
            assert len(imported.stderr.strip().splitlines()) == 1, imported.stderr
        log = hook_log()
    finally:
        _protect(home, 0o600)
    assert check_journal(paths.journal_path(), before) == before
    assert log and any(w in log[-1]["error"].lower() for w in ("read", "journal", "permission")), log
    run(HOOK, payload)
    assert set(check_journal(paths.journal_path(), before)) == transcripts.uuids()
    assert stat.S_IMODE(os.stat(paths.journal_path()).st_mode) == 0o600
