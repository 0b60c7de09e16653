#!/usr/bin/env python3
"""What rendering messages as HTML costs (``claude_chats.ui.render``, issue 23): the figures behind
``render.MAX_WORK`` and a session page's budget.

    .venv/bin/python scripts/bench_render.py [--corpus ../shared/corpus/transcripts] [--repeat 3]

Prints, with the load average:

* per pattern of markup (``*a `` repeated, ``[``, lines...) at 5, 20 and 100 KB: milliseconds,
  ``render.work`` (the estimate) and whether it was parsed or shown as it is (``plain``): the
  slowest parsed one is what a hostile message can cost;
* the real transcripts' messages (parsed by ``claude_chats.transcript``) rendered one by one:
  count, p50, p99 and max per message, and the time of pages of 200 of them (p50, max).
"""

import argparse
import os
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from claude_chats import transcript  # noqa: E402
from claude_chats.ui import render  # noqa: E402

PATTERNS = ["*a ", "_a ", "~~a ", "`a ", "[a](b) ", "&amp; ", "<a> ", "\\* ", "# a\n", "> ", "- a\n", "1. a\n",
            "a\n", "    a\n", "a|b\n", "**a** ", "[a] ", "a  \n", "$ ", "<http://a.b> ", "[", "![", "![](", "word "]
SIZES = (5_000, 20_000, 100_000)
PAGE = 200


def best_of(repeat, fn):
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - started)
    return min(times), out


def patterns(repeat):
    slowest = (0.0, "")
    print(f"{'pattern':16} {'chars':>7} {'ms':>8} {'work':>9}  shown")
    for pattern in PATTERNS:
        for size in SIZES:
            text = pattern * (size // len(pattern))
            took, out = best_of(repeat, lambda: render.markdown(text))
            plain = out.startswith('<pre class="plain">')
            if not plain:
                slowest = max(slowest, (took, f"{pattern!r} x {size // len(pattern)}"))
            print(f"{pattern!r:16} {len(text):7} {took * 1e3:8.1f} {render.work(text):9}  "
                  f"{'plain' if plain else 'markdown'}")
    print(f"slowest parsed: {slowest[0] * 1e3:.1f} ms ({slowest[1]})")


def corpus_messages(folder):
    out = []
    for path in sorted(pathlib.Path(folder).rglob("*.jsonl")):
        ctx = transcript.FileContext.for_path(str(path))
        result = transcript.parse_lines(path.read_bytes(), ctx, final=True)
        out += [{"seq": i, "role": r.role, "kind": r.kind, "timestamp": r.timestamp, "text": r.text}
                for i, r in enumerate(result.records)]
    return out


def real(folder, repeat):
    messages = corpus_messages(folder)
    if not messages:
        print(f"no transcripts under {folder}: skipped the real messages")
        return
    times = [best_of(repeat, lambda m=m: render.message(m))[0] for m in messages]
    ordered = sorted(times)
    p99 = ordered[int(len(ordered) * 0.99)]
    print(f"real messages: {len(times):,}, {sum(len(m['text']) for m in messages):,} characters; per message "
          f"p50 {statistics.median(times) * 1e3:.3f} ms, p99 {p99 * 1e3:.2f} ms, max {ordered[-1] * 1e3:.1f} ms")
    pages = [sum(times[i:i + PAGE]) for i in range(0, len(times), PAGE)]
    print(f"pages of {PAGE}: {len(pages)}, p50 {statistics.median(pages) * 1e3:.1f} ms, "
          f"max {max(pages) * 1e3:.1f} ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=str(pathlib.Path(__file__).resolve().parents[2] / "shared" / "corpus"
                                                / "transcripts"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    render.markdown("warm *the* parser")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, cores {os.cpu_count()}, "
          f"MAX_WORK {render.MAX_WORK:,}, MAX_MARKDOWN {render.MAX_MARKDOWN:,}")
    patterns(args.repeat)
    real(args.corpus, args.repeat)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
