"""The corpus of ``scripts/bench_scale.py`` is what it claims: ``chats import`` (a process) reads every
message line it writes (it skips only bookkeeping), with the kinds and line size the benchmark states."""

import importlib.util
import json
import pathlib
import subprocess

from tests.support.hooks import CHATS

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "scale_corpus.py"


def load_corpus_module():
    spec = importlib.util.spec_from_file_location("scale_corpus", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_transcripts_import_whole(tmp_path):
    corpus = load_corpus_module()
    projects = tmp_path / "projects"
    stats = corpus.write_corpus(str(projects), 6000, sample=50)
    out = subprocess.run(CHATS + ["import", str(projects), "--json"], capture_output=True, text=True, check=True)
    imported = json.loads(out.stdout)
    assert imported["errors"] == []
    # every user and assistant line is a message; summaries and compaction boundaries may be kept too
    assert stats["messages"] <= imported["messages"] <= stats["messages"] + stats["kinds"].get("summary", 0) + 50
    assert set(imported["skipped_by_reason"]) <= {"bookkeeping", "system turn_duration"}, imported
    assert 1500 <= stats["bytes"] / stats["lines"] <= 2100          # ~1.77 KB a line, as the corpus
    assert stats["kinds"]["assistant"] > stats["kinds"]["user"] > 0 and stats["kinds"]["summary"] > 0
    blocks = {}
    for path in projects.rglob("*.jsonl"):
        for line in path.read_text().splitlines():
            obj = json.loads(line)
            content = obj.get("message", {}).get("content")
            kind = "prompt" if isinstance(content, str) else content[0]["type"] if content else obj["type"]
            blocks[kind] = blocks.get(kind, 0) + 1
            assert obj.get("version", corpus.VERSION) == corpus.VERSION
    assert {"prompt", "thinking", "text", "tool_use", "tool_result"} <= set(blocks), blocks
    sessions = json.loads(subprocess.run(CHATS + ["sessions", "--json", "-n", "100000"], capture_output=True,
                                         text=True, check=True).stdout)
    assert len({s["project_path"] for s in sessions}) >= 5
    assert stats["long_session"] in {s["session_id"] for s in sessions}
    assert len(stats["sample"]) > 20
