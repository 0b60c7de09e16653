#!/usr/bin/env python3
"""Import throughput: MB of transcript per second through ``chats import``.

Builds synthetic transcripts (a realistic mix of prompts, replies, tool calls
and tool output; 64 MB by default) and, when ../shared exists, also imports
the real corpus; each into a fresh journal, through the real CLI in a
subprocess. Budget (DESIGN.md): at least 10 MB/s.

    .venv/bin/python scripts/bench_import.py [--mb 64]
"""

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import uuid

sys.path.insert(0, os.path.dirname(__file__))
from bench_hook import make_transcript  # noqa: E402

CORPUS = pathlib.Path(__file__).resolve().parent.parent.parent / "shared" / "corpus" / "transcripts"


def run_import(source, work):
    env = dict(os.environ, CLAUDE_CHATS_HOME=tempfile.mkdtemp(dir=work))
    chats = os.path.join(os.path.dirname(sys.executable), "chats")
    out = subprocess.run([chats, "import", str(source), "--json"], capture_output=True, check=True, env=env)
    return json.loads(out.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=64)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="bench-import-")
    synthetic = pathlib.Path(work, "projects", "-home-dev-project")
    synthetic.mkdir(parents=True)
    per_file = 4 << 20
    for _ in range(max(1, (args.mb << 20) // per_file)):
        session = str(uuid.uuid4())
        make_transcript(synthetic / f"{session}.jsonl", per_file, session)
    print(f"{'source':28} {'MB':>8} {'seconds':>8} {'MB/s':>8} {'messages':>9}")
    sources = [("synthetic", synthetic.parent)] + ([("../shared corpus", CORPUS)] if CORPUS.is_dir() else [])
    for name, source in sources:
        s = run_import(source, work)
        print(f"{name:28} {s['bytes'] / 1e6:8.1f} {s['seconds']:8.2f} {s['mb_per_second']:8.1f} {s['messages']:9d}")
    print("budget: at least 10 MB/s")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
