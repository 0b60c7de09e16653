#!/usr/bin/env python3
"""Redaction: recall and precision on the labelled corpus, and throughput in MB/s.

Recall and precision come from tests/support/redaction_corpus.py (synthetic secrets
and look-alike non-secrets). Throughput is measured on the message texts of
the real transcripts in ../shared/corpus (what sync will redact), when present,
on synthetic conversation text, and on adversarial text (anchors repeated
without secrets: the worst case for the patterns).

    .venv/bin/python scripts/bench_redact.py [--repeat 3] [--json]
"""

import argparse
import json
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from claude_chats import redact, transcript  # noqa: E402
from tests.support import redaction_corpus  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "transcripts"


def corpus_texts():
    """Message texts of the real transcripts, as the journal stores them."""
    texts = []
    if not CORPUS.is_dir():
        return texts
    for path in sorted(CORPUS.rglob("*.jsonl")):
        result = transcript.parse_lines(path.read_bytes(), transcript.FileContext.for_path(str(path)), final=True)
        texts.extend(r.text for r in result.records)
    return texts


def synthetic_texts(mb=8):
    para = ("I ran the tests and `pytest -q` reported 3 failures in tests/test_store.py. The token count for the "
            "prompt was 1532 input_tokens; the tokenizer splits on whitespace. Let me read config.py:\n"
            "    def load(path):\n        with open(path) as fh:\n            return tomllib.load(fh)\n"
            "commit 3f786850e387550fdab836ed7e6dc881de23001b\nThe password policy requires 12 characters and the "
            "API key is read from the environment (OPENAI_API_KEY). https://docs.example.com/api/v1/keys\n")
    return [para] * (mb * 1_000_000 // len(para))


def adversarial_texts():
    pieces = ["-----BEGIN PRIVATE KEY-----\" ", "eyJ-", "sk-", "key=", "token: ", "password=$X ", "://a:", "AKIA",
              "Authorization: Bearer ", "curl -u ", "--token ", "ghp_", "a" * 50, "secret_key = os.environ[", "= "]
    return [p * (200_000 // len(p)) for p in pieces]


def throughput(texts, repeat):
    size = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) / 1e6
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for text in texts:
            redact.redact(text)
        best = min(best, time.perf_counter() - started)
    return {"mb": round(size, 2), "seconds": round(best, 3), "mb_per_second": round(size / best, 1),
            "texts": len(texts)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    started = time.perf_counter()
    redact.scan("warm up: compile the patterns")
    compile_ms = (time.perf_counter() - started) * 1000
    score = redaction_corpus.evaluate(redact.redact)
    report = {
        "secrets": score.secrets, "non_secrets": score.non_secrets, "caught": score.caught,
        "typed_correctly": score.typed, "missed": score.missed, "false_positives": score.false_positives,
        "recall": round(score.recall, 4), "precision": round(score.precision, 4),
        "compile_ms": round(compile_ms, 1), "kinds": len(redact.kinds()),
        "throughput": {"synthetic": throughput(synthetic_texts(), args.repeat),
                       "adversarial": throughput(adversarial_texts(), args.repeat)},
    }
    real = corpus_texts()
    if real:
        report["throughput"]["corpus"] = throughput(real, args.repeat)
        report["corpus_findings"] = _corpus_findings(real)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"corpus: {score.secrets} secrets, {score.non_secrets} look-alike non-secrets")
    print(f"caught {score.caught}/{score.secrets} (recall {score.recall:.1%}), "
          f"{score.typed} with the expected placeholder kind")
    print(f"false positives {len(score.false_positives)}/{score.non_secrets} (precision {score.precision:.1%})")
    for name in score.missed:
        print(f"  missed: {name}")
    for name in score.false_positives:
        print(f"  false positive: {name}")
    print(f"patterns compiled in {compile_ms:.1f} ms ({len(redact.kinds())} kinds)")
    for name, t in report["throughput"].items():
        print(f"throughput {name:12s} {t['mb']:8.2f} MB in {t['seconds']:.3f} s = {t['mb_per_second']:8.1f} MB/s "
              f"({t['texts']} texts)")
    if real:
        print(f"real transcripts: findings by kind {report['corpus_findings']}")


def _corpus_findings(texts):
    counts = {}
    for text in texts:
        for f in redact.scan(text):
            counts[f.kind] = counts.get(f.kind, 0) + 1
    return dict(sorted(counts.items()))


if __name__ == "__main__":
    sys.exit(main())
