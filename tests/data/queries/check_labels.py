#!/usr/bin/env python3
"""Verify the labels of the query sets in this folder against the transcript corpus.

Standard library only. This is label verification, not retrieval: it never looks at a
query's text, only at the ids and the `evidence` strings the labeller wrote down.

Checks, for every record of tool_output.jsonl, general_heldout.jsonl, recall_hints.jsonl:

- the fields are there, ids are unique, `split` is dev/heldout;
- every id in relevant_session_ids (and current_session_id) is a conversation of the
  corpus: a main session (a `sessionId` of a non-subagent file) or a subagent
  conversation `<parent session>:agent-<id>` (a non-"Warmup" agent-*.jsonl file);
- tool_output.jsonl: `evidence` occurs verbatim in a tool_result block of one of the
  relevant conversations (answer_kind "tool_result") or in a text block / string
  message of one of them (answer_kind "text"); where the same evidence also occurs in
  conversations that are not listed, it says so (a hint that a label may be incomplete);
- recall_hints.jsonl: should_hint true has relevant ids and false has none, the current
  session is not among the relevant ones, and `cwd` is a cwd of the corpus (of the
  current session when there is one).

Usage: python3 tests/data/queries/check_labels.py [--corpus DIR]
(default corpus: $CLAUDE_CHATS_CORPUS, else /work/shared/corpus/transcripts).
Exit status 1 when any check fails; warnings alone do not fail.
"""

import argparse
import collections
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
SPLITS = {"dev", "heldout"}


class Conversation:
    __slots__ = ("cid", "cwds", "tool_results", "texts")

    def __init__(self, cid):
        self.cid = cid
        self.cwds = set()
        self.tool_results = []
        self.texts = []


def _block_text(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def load_corpus(root):
    convs = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in sorted(files):
            if not name.endswith(".jsonl"):
                continue
            path = os.path.join(dirpath, name)
            stem = name[:-6]
            records = []
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    line = line.strip()
                    if not line:
                        continue
                    try:
                        records.append(json.loads(line))
                    except json.JSONDecodeError:
                        continue
            if stem.startswith("agent-"):
                first_user = next((r for r in records if r.get("type") == "user"), None)
                if first_user is not None and first_user.get("message", {}).get("content") == "Warmup":
                    continue
                folders = dirpath.replace("\\", "/").split("/")
                parent = next((r["sessionId"] for r in records if r.get("sessionId")), None)
                if parent is None and len(folders) >= 2 and folders[-1] == "subagents":
                    parent = folders[-2]
                if parent is None:
                    continue
                key_of = lambda r, cid=f"{parent}:agent-{stem[6:]}": cid  # noqa: E731
            else:
                key_of = lambda r: r.get("sessionId")  # noqa: E731
            for r in records:
                cid = key_of(r)
                if not cid or r.get("type") not in ("user", "assistant"):
                    continue
                conv = convs.setdefault(cid, Conversation(cid))
                if r.get("cwd"):
                    conv.cwds.add(r["cwd"])
                content = r.get("message", {}).get("content")
                if isinstance(content, str):
                    conv.texts.append(content)
                    continue
                for block in content or []:
                    if not isinstance(block, dict):
                        continue
                    if block.get("type") == "tool_result":
                        text = _block_text(block.get("content"))
                        conv.tool_results.append(text)
                        if "\x1b" in text:
                            conv.tool_results.append(ANSI.sub("", text))
                    elif block.get("type") == "text":
                        conv.texts.append(block.get("text", ""))
    return convs


def read_jsonl(path):
    out = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                out.append((n, json.loads(line)))
    return out


class Report:
    def __init__(self):
        self.errors, self.warnings = [], []

    def error(self, where, msg):
        self.errors.append(f"{where}: {msg}")

    def warn(self, where, msg):
        self.warnings.append(f"{where}: {msg}")


def check_common(fname, rows, required, convs, rep):
    seen = set()
    for n, rec in rows:
        where = f"{fname}:{n} ({rec.get('id')})"
        for field in required:
            if field not in rec:
                rep.error(where, f"missing field {field!r}")
        if rec.get("id") in seen:
            rep.error(where, "duplicate id")
        seen.add(rec.get("id"))
        ids = rec.get("relevant_session_ids", [])
        if not isinstance(ids, list):
            rep.error(where, "relevant_session_ids is not a list")
            continue
        if len(set(ids)) != len(ids):
            rep.error(where, "relevant_session_ids has duplicates")
        for sid in ids:
            if sid not in convs:
                rep.error(where, f"unknown conversation {sid!r}")
        if "split" in rec and rec["split"] not in SPLITS:
            rep.error(where, f"split {rec['split']!r} not in {sorted(SPLITS)}")


def check_tool_output(rows, convs, rep):
    fname = "tool_output.jsonl"
    check_common(fname, rows, ("id", "query", "relevant_session_ids", "answer_kind", "evidence"), convs, rep)
    for n, rec in rows:
        where = f"{fname}:{n} ({rec.get('id')})"
        kind, ev = rec.get("answer_kind"), rec.get("evidence", "")
        if kind not in ("tool_result", "text"):
            rep.error(where, f"answer_kind {kind!r}")
            continue
        if not rec.get("relevant_session_ids"):
            rep.error(where, "no relevant session")
        if not ev or len(ev) > 80:
            rep.error(where, f"evidence must be 1..80 characters (has {len(ev)})")
            continue
        field = "tool_results" if kind == "tool_result" else "texts"
        holders = sorted(c.cid for c in convs.values() if any(ev in t for t in getattr(c, field)))
        listed = set(rec.get("relevant_session_ids", []))
        if not listed & set(holders):
            rep.error(where, f"evidence not found in a {kind} of a relevant conversation (found in: {holders or 'none'})")
        others = [h for h in holders if h not in listed]
        if others:
            rep.warn(where, f"evidence also in {kind} of unlisted {others}")


def check_general(rows, convs, rep):
    fname = "general_heldout.jsonl"
    check_common(fname, rows, ("id", "query", "relevant_session_ids", "split"), convs, rep)
    for n, rec in rows:
        if not rec.get("relevant_session_ids"):
            rep.error(f"{fname}:{n} ({rec.get('id')})", "no relevant session")


def check_recall(rows, convs, rep):
    fname = "recall_hints.jsonl"
    required = ("id", "prompt", "cwd", "current_session_id", "should_hint", "relevant_session_ids", "split")
    check_common(fname, rows, required, convs, rep)
    all_cwds = set().union(*(c.cwds for c in convs.values()))
    for n, rec in rows:
        where = f"{fname}:{n} ({rec.get('id')})"
        ids, cur = rec.get("relevant_session_ids", []), rec.get("current_session_id")
        if not isinstance(rec.get("should_hint"), bool):
            rep.error(where, "should_hint is not a boolean")
        elif rec["should_hint"] and not ids:
            rep.error(where, "should_hint true without relevant sessions")
        elif not rec["should_hint"] and ids:
            rep.error(where, "should_hint false with relevant sessions")
        if cur is not None:
            if cur not in convs:
                rep.error(where, f"unknown current session {cur!r}")
            elif rec.get("cwd") not in convs[cur].cwds:
                rep.error(where, f"cwd {rec.get('cwd')!r} is not a cwd of {cur} ({sorted(convs[cur].cwds)})")
            if cur in ids:
                rep.error(where, "the current session is listed as relevant")
        if rec.get("cwd") not in all_cwds:
            rep.error(where, f"cwd {rec.get('cwd')!r} does not occur in the corpus")


def summary(name, rows, lines):
    def kind(r):
        if "answer_kind" in r:
            return r["answer_kind"]
        if "should_hint" in r:
            return "hint" if r["should_hint"] else "no-hint"
        return "query"
    cells = collections.Counter((kind(r), r.get("split", "-")) for _, r in rows)
    covered = {s for _, r in rows for s in r.get("relevant_session_ids", [])}
    parts = ", ".join(f"{k}/{s} {n}" for (k, s), n in sorted(cells.items()))
    lines.append(f"{name}: {len(rows)} records ({parts}); {len(covered)} conversations labelled relevant")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=os.environ.get("CLAUDE_CHATS_CORPUS", "/work/shared/corpus/transcripts"))
    ap.add_argument("-q", "--quiet", action="store_true", help="do not print warnings")
    args = ap.parse_args()
    convs = load_corpus(args.corpus)
    if not convs:
        print(f"no conversations under {args.corpus}", file=sys.stderr)
        return 1
    rep, lines = Report(), []
    for name, fn in (("tool_output.jsonl", check_tool_output), ("general_heldout.jsonl", check_general), ("recall_hints.jsonl", check_recall)):
        path = os.path.join(HERE, name)
        if not os.path.exists(path):
            rep.error(name, "missing file")
            continue
        rows = read_jsonl(path)
        fn(rows, convs, rep)
        summary(name, rows, lines)
    print(f"corpus: {len(convs)} conversations under {args.corpus}")
    for line in lines:
        print(line)
    if not args.quiet:
        for w in rep.warnings:
            print("warning:", w)
    for e in rep.errors:
        print("ERROR:", e)
    print(f"{len(rep.errors)} errors, {len(rep.warnings)} warnings")
    return 1 if rep.errors else 0


if __name__ == "__main__":
    sys.exit(main())
