#!/usr/bin/env python3
"""What keeping transcript lines for ``chats restore`` costs: journal growth per MB of transcript,
the compression ratio, and the time to compress.

Imports each set of transcripts into a fresh journal with this code, and (``--compare DIR``: a
copy of the package from before, ``git archive <commit> claude_chats | tar -x -C DIR``) with that
code, then VACUUMs both and compares their sizes. Default sets: the real Claude Code 2.1.332
transcripts of tests/claude_code/fixtures and, when ../shared exists, the corpus of older versions.

    .venv/bin/python scripts/bench_raw_lines.py [--compare DIR] [FOLDER ...]
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import zlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULTS = [ROOT / "tests" / "claude_code" / "fixtures", ROOT.parent / "shared" / "corpus" / "transcripts"]

IMPORT = """
import sys
from claude_chats.localstore.journal import Journal, discover
with Journal.open(sys.argv[1]) as journal:
    journal.import_files(discover([sys.argv[2]]))
    journal.conn.execute("VACUUM")
"""


def journal_size(folder, code=None):
    """Bytes of a journal holding ``folder``'s transcripts, imported by the package at ``code`` (None: this one)."""
    with tempfile.TemporaryDirectory() as work:
        db = os.path.join(work, "journal.db")
        env = dict(os.environ, CLAUDE_CHATS_HOME=work)
        if code:
            env["PYTHONPATH"] = os.path.abspath(code)
        subprocess.run([sys.executable, "-c", IMPORT, db, str(folder)], check=True, env=env, cwd=work)
        return os.path.getsize(db), _kept(db)


def _kept(db):
    import apsw

    conn = apsw.Connection(db)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'raw_lines'").fetchall():
            return None
        rows = conn.execute("SELECT line FROM raw_lines WHERE line IS NOT NULL").fetchall()
    finally:
        conn.close()
    raw = [zlib.decompress(line) for (line,) in rows]
    return {"lines": len(rows), "bytes": sum(map(len, raw)), "compressed": sum(len(line) for (line,) in rows),
            "compress_ms_per_mb": _compress_ms(raw)}


def _compress_ms(raw):
    total = sum(map(len, raw)) or 1
    started = time.perf_counter()
    for line in raw:
        zlib.compress(line, 6)
    return round((time.perf_counter() - started) * 1e3 / (total / 1e6), 2)


def transcript_bytes(folder):
    return sum(p.stat().st_size for p in pathlib.Path(folder).rglob("*.jsonl"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=pathlib.Path)
    parser.add_argument("--compare", metavar="DIR", help="a folder holding the package from before")
    args = parser.parse_args()
    folders = args.folders or [f for f in DEFAULTS if f.is_dir()]
    for folder in folders:
        mb = transcript_bytes(folder) / 1e6
        size, kept = journal_size(folder)
        row = {"transcripts": str(folder), "transcript_mb": round(mb, 2), "journal_mb": round(size / 1e6, 3)}
        if kept:
            row.update(kept_mb=round(kept["bytes"] / 1e6, 3), kept_share=round(kept["bytes"] / 1e6 / mb, 3),
                       stored_mb=round(kept["compressed"] / 1e6, 3),
                       ratio=round(kept["bytes"] / max(kept["compressed"], 1), 2),
                       compress_ms_per_kept_mb=kept["compress_ms_per_mb"])
        if args.compare:
            before, _ = journal_size(folder, args.compare)
            row.update(journal_mb_before=round(before / 1e6, 3),
                       growth_mb_per_transcript_mb=round((size - before) / 1e6 / mb, 3))
        print(json.dumps(row))


if __name__ == "__main__":
    main()
