#!/usr/bin/env python3
"""Raw llama-cpp-python measurements behind the embedding defaults (issue 14), on real corpus texts.

    .venv/bin/python scripts/bench_llama.py texts      # build the chunk cache, per-kind figures
    .venv/bin/python scripts/bench_llama.py threads    # 1 vs 2 threads, idle / 1 / 2 CPU burners, niced or not
    .venv/bin/python scripts/bench_llama.py idle       # 1 vs 2 threads once the rest of the machine is idle
    .venv/bin/python scripts/bench_llama.py quant      # f32 / f16 / bf16 / q8_0 / q4_0: speed, cosine vs f16
    .venv/bin/python scripts/bench_llama.py batch      # n_batch (= n_ubatch), texts per decode, sorted packing
    .venv/bin/python scripts/bench_llama.py chunklen   # chunk window 128..512 tokens: speed per character
    .venv/bin/python scripts/bench_llama.py limit      # tokens/s of one full decode: the model's own limit here
    .venv/bin/python scripts/bench_llama.py policy     # per-kind policies: tokens and chunks each would embed

The texts are what ``chats sync`` embeds today: the shared corpus imported into a scratch
journal, each message chunked by the package's own chunker behind the default ``context``
recipe's prefix (``models.recipe``), cached as JSON (``--cache``). Every measurement runs
in this process through llama-cpp-python's own ``Llama.embed`` (or, where token lists are
needed, the same decode loop on tokens: ``embed_tokens``), prints the load average before
and after, and interleaves the configurations it compares (best and median of ``--repeat``).
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
CORPUS = ROOT.parent / "shared" / "corpus" / "transcripts"
if not CORPUS.is_dir():
    CORPUS = pathlib.Path("/work/shared/corpus/transcripts")
CACHE = pathlib.Path(os.path.expanduser("~/.cache/claude-chats-bench/issue14-chunks.json"))


def load():
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def test_model():
    from build_test_model import build

    return build()


# -- the texts ------------------------------------------------------------------------------------

def build_chunks(model, corpus=CORPUS):
    """Per message and chunk, what sync embeds today (context recipe), with token counts."""
    from claude_chats.localstore.journal import Journal, discover
    from claude_chats.models.chunking import chunk_text
    from claude_chats.models.llama import LlamaProvider
    from claude_chats.models.recipe import CONTEXT, _Prefixed, prefix, with_previous

    provider = LlamaProvider(model=model, threads=1)
    messages, chunks = [], []
    with tempfile.TemporaryDirectory() as tmp, Journal.open(os.path.join(tmp, "j.db")) as journal:
        journal.import_files(discover([str(corpus)]))
        rows = journal.conn.execute(
            "SELECT id, session_id, role, kind, created_at, chats_text(content) FROM messages JOIN session_numbers "
            "ON number = session ORDER BY session_id, seq").fetchall()
        kinds = {r[0]: r[3] for r in rows}
        for message in with_previous(rows):
            before = prefix(message, recipe=CONTEXT)
            content = message["content"] or ""
            messages.append({"id": message["id"], "kind": kinds[message["id"]], "role": message["role"],
                             "prefix": before, "content": content,
                             "content_tokens": provider.count_tokens(content) if content.strip() else 0})
            for n, (start, end, piece) in enumerate(chunk_text(content, _Prefixed(provider, before))):
                text = before + piece
                chunks.append({"id": message["id"], "kind": kinds[message["id"]], "index": n, "text": text,
                               "chars": len(piece), "prefix_chars": len(before),
                               "tokens": provider.count_tokens(text)})
    provider.close()
    return {"messages": messages, "chunks": chunks}


def corpus_chunks(model, refresh=False):
    if CACHE.exists() and not refresh:
        return json.loads(CACHE.read_text())
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    data = build_chunks(model)
    CACHE.write_text(json.dumps(data))
    return data


def sample(chunks, count, seed=11):
    """A fixed spread of ``count`` chunks (every k-th in message order)."""
    step = max(1, len(chunks) // count)
    return chunks[seed % step::step][:count]


def cmd_texts(args):
    started = time.perf_counter()
    data = corpus_chunks(args.model, refresh=args.refresh)
    print(f"{len(data['messages'])} messages, {len(data['chunks'])} chunks "
          f"({time.perf_counter() - started:.1f} s; cache {CACHE})")
    by = {}
    for m in data["messages"]:
        row = by.setdefault(m["kind"], {"messages": 0, "chars": 0, "content_tokens": 0, "chunks": 0,
                                        "tokens": 0, "prefix_chars": 0, "embedded_chars": 0})
        row["messages"] += 1
        row["chars"] += len(m["content"])
        row["content_tokens"] += m["content_tokens"]
    for c in data["chunks"]:
        row = by[c["kind"]]
        row["chunks"] += 1
        row["tokens"] += c["tokens"]
        row["prefix_chars"] += c["prefix_chars"]
        row["embedded_chars"] += c["chars"]
    total_tokens = sum(r["tokens"] for r in by.values())
    total_chars = sum(r["chars"] for r in by.values())
    print(f"{'kind':16s} {'msgs':>5s} {'content chars':>13s} {'chars%':>6s} {'content tok':>11s} {'chars/tok':>9s} "
          f"{'chunks':>6s} {'tokens embedded':>15s} {'tok%':>5s} {'prefix chars':>12s}")
    for kind, r in sorted(by.items(), key=lambda kv: -kv[1]["tokens"]):
        print(f"{kind:16s} {r['messages']:5d} {r['chars']:13,d} {100 * r['chars'] / total_chars:5.1f}% "
              f"{r['content_tokens']:11,d} {r['chars'] / max(1, r['content_tokens']):9.2f} {r['chunks']:6d} "
              f"{r['tokens']:15,d} {100 * r['tokens'] / total_tokens:4.1f}% {r['prefix_chars']:12,d}")
    lengths = sorted(c["tokens"] for c in data["chunks"])
    print(f"all: {total_chars:,d} content chars, {total_tokens:,d} tokens embedded in {len(lengths)} chunks; "
          f"tokens per chunk p10 {lengths[len(lengths) // 10]}, p50 {lengths[len(lengths) // 2]}, "
          f"p90 {lengths[9 * len(lengths) // 10]}, max {lengths[-1]}; chunks >= 500 tokens "
          f"{sum(1 for n in lengths if n >= 500)}")


# -- raw llama.cpp --------------------------------------------------------------------------------

def open_llama(model, threads=1, n_batch=512, extra_bufts=None, **extra):
    """A llama-cpp-python embedding context. ``extra_bufts`` False loads the weights without
    llama.cpp's extra buffer types (AMX, repacking): on this machine's CPU (AMX_INT8) a q8_0 or
    q4_0 model segfaults in ``ggml_backend_amx_mul_mat`` at the first decode without that
    (llama-cpp-python 0.3.36); default: off for quantised files, on otherwise."""
    import llama_cpp
    import llama_cpp.llama_cpp as low

    if extra_bufts is None:
        extra_bufts = not any(q in str(model) for q in (".q8_0.", ".q4_0."))
    default = getattr(low, "_default_model_params", None) or low.llama_model_default_params
    low._default_model_params = default

    def params():
        p = default()
        p.use_extra_bufts = extra_bufts
        return p

    low.llama_model_default_params = params
    n_ctx = max(512, n_batch)
    return llama_cpp.Llama(model_path=str(model), embedding=True, n_ctx=n_ctx, n_batch=n_batch, n_ubatch=n_batch,
                           n_threads=threads, n_threads_batch=threads, verbose=False, **extra)


def embed_tokens(llm, token_lists, max_seqs=None):
    """``Llama.embed``'s decode loop on token lists: greedy packing into ``n_batch`` tokens
    (and at most ``max_seqs`` sequences) per decode; returns (vectors, decodes)."""
    import llama_cpp

    n_batch, n_embd = llm.n_batch, llm.n_embd()
    max_seqs = min(max_seqs or n_batch, llm.context_params.n_seq_max)
    batch, ctx = llm._batch, llm._ctx
    out, sizes, used, decodes = [], 0, 0, 0

    def flush():
        nonlocal sizes, used, decodes
        ctx.kv_cache_clear()
        ctx.decode(batch)
        batch.reset()
        for i in range(sizes):
            ptr = llama_cpp.llama_get_embeddings_seq(ctx.ctx, i)
            out.append(np.ctypeslib.as_array(ptr, shape=(n_embd,)).copy())
        sizes, used, decodes = 0, 0, decodes + 1

    batch.reset()
    for tokens in token_lists:
        if used + len(tokens) > n_batch or sizes >= max_seqs:
            flush()
        batch.add_sequence(tokens, sizes, True)
        sizes += 1
        used += len(tokens)
    if sizes:
        flush()
    return np.asarray(out), decodes


def tokenize_all(llm, texts):
    return [llm.tokenize(t.encode("utf-8")) for t in texts]


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def compare(runs, repeat, label="config"):
    """Interleave ``runs`` ({name: fn}) ``repeat`` times; {name: (best wall, median wall, best cpu)}."""
    walls = {name: [] for name in runs}
    cpus = {name: [] for name in runs}
    for _ in range(repeat):
        for name, fn in runs.items():
            wall, cpu, _ = timed(fn)
            walls[name].append(wall)
            cpus[name].append(cpu)
    return {name: (min(walls[name]), statistics.median(walls[name]), min(cpus[name])) for name in runs}


# -- threads ----------------------------------------------------------------------------------------

BURN = "import os, sys\nos.nice(int(sys.argv[1]))\nwhile True: pass"


def threads_worker(args):
    """One configuration in a process of its own (``os.nice`` cannot be undone): prints JSON.

    Each run embeds the chunks 8 at a time and stops after ``--budget`` seconds (a collapsed
    configuration would otherwise take many minutes): tokens/s is tokens done over the time taken."""
    if args.nice:
        os.nice(args.nice)
    data = corpus_chunks(args.model)
    texts = [c["text"] for c in sample(data["chunks"], args.texts)]
    llm = open_llama(args.model, threads=args.threads, flash_attn=args.flash_attn)
    tokens = tokenize_all(llm, texts)
    embed_tokens(llm, tokens[:4])
    results = []
    for _ in range(args.repeat):
        wall, cpu, done = time.perf_counter(), time.process_time(), 0
        for i in range(0, len(tokens), 8):
            embed_tokens(llm, tokens[i:i + 8])
            done += sum(map(len, tokens[i:i + 8]))
            if time.perf_counter() - wall > args.budget:
                break
        results.append((time.perf_counter() - wall, time.process_time() - cpu, done))
    print(json.dumps({"tokens": sum(map(len, tokens)), "texts": len(texts), "runs": results}))


def cmd_threads(args):
    """Each cell: a fresh process, ``--texts`` chunks; burners are ``while True`` processes at nice 0."""
    def run(threads, nice):
        cmd = [sys.executable, __file__, "_threads_worker", "--threads", str(threads), "--nice", str(nice),
               "--texts", str(args.texts), "--repeat", str(args.repeat), "--model", str(args.model),
               "--budget", str(args.budget)] + (["--flash-attn"] if args.flash_attn else [])
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        return json.loads(out.strip().splitlines()[-1])

    print(f"threads x burners x nice, {args.texts} chunks per run (at most {args.budget} s), {args.repeat} runs "
          f"per cell, flash attention {'on' if args.flash_attn else 'off'} (start {load()})")
    print(f"{'burners':>7s} {'nice':>4s} {'threads':>7s} {'tokens/s best':>13s} {'median':>7s} "
          f"{'per CPU s':>9s} {'CPU/wall':>8s} {'load before':>18s}")
    for burners in args.burners:
        procs = [subprocess.Popen([sys.executable, "-c", BURN, "0"]) for _ in range(burners)]
        try:
            time.sleep(2 if burners else 0)
            for nice in args.nices:
                for threads in args.thread_counts:
                    before = load()
                    r = run(threads, nice)
                    rates = [n / w for w, _, n in r["runs"]]
                    cpu_rate = max(n / c for _, c, n in r["runs"])
                    ratio = statistics.median(c / w for w, c, _ in r["runs"])
                    print(f"{burners:7d} {nice:4d} {threads:7d} {max(rates):13.0f} {statistics.median(rates):7.0f} "
                          f"{cpu_rate:9.0f} {ratio:8.2f} {before:>18s}", flush=True)
        finally:
            for p in procs:
                p.kill()
                p.wait()
    print(f"end {load()}")


def _busy():
    with open("/proc/stat") as fh:
        f = [int(x) for x in fh.readline().split()[1:9]]
    return sum(f) - f[3] - f[4], sum(f)


def cmd_idle(args):
    """Wait for the rest of the machine to be (nearly) idle, then time 1 and 2 threads back to back.

    The other processes' load is measured during each run, not guessed from the load average:
    the machine's busy time (/proc/stat) less the worker's own CPU time (RUSAGE_CHILDREN)."""
    import resource

    cores = os.cpu_count()
    print(f"waiting for the others' load to fall below {args.idle_below} core(s) "
          f"(at most {args.wait:.0f} s; start {load()})", flush=True)
    deadline, pairs = time.monotonic() + args.wait, 0
    while time.monotonic() < deadline and pairs < args.pairs:
        b0, t0 = _busy()
        time.sleep(3)
        b1, t1 = _busy()
        others = (b1 - b0) / max(1, t1 - t0) * cores
        if others > args.idle_below:
            continue
        pairs += 1
        print(f"pair {pairs}: others {others:.2f} cores over the 3 s before ({load()})", flush=True)
        for threads in (1, 2, 1, 2):
            cmd = [sys.executable, __file__, "_threads_worker", "--threads", str(threads), "--texts", str(args.texts),
                   "--repeat", "1", "--model", str(args.model), "--budget", str(args.budget)] + \
                  (["--flash-attn"] if args.flash_attn else [])
            r0, (b0, t0), w0 = resource.getrusage(resource.RUSAGE_CHILDREN), _busy(), time.perf_counter()
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            r1, (b1, t1), w1 = resource.getrusage(resource.RUSAGE_CHILDREN), _busy(), time.perf_counter()
            child = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) / (w1 - w0)
            during = max(0.0, (b1 - b0) / max(1, t1 - t0) * cores - child)
            wall, cpu, done = json.loads(out.strip().splitlines()[-1])["runs"][0]
            print(f"  {threads} thread(s): {done / wall:6.0f} tokens/s wall, {done / cpu:6.0f} per CPU s, "
                  f"CPU/wall {cpu / wall:.2f}; others during the run {during:.2f} cores", flush=True)
    print(f"end {load()}")


# -- quantisation -----------------------------------------------------------------------------------

FTYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 7, "bf16": 32}


def quantized(model, name):
    """``model`` (the f16 GGUF) requantised to ``name`` with llama.cpp's ``llama_model_quantize``."""
    import llama_cpp

    if name == "f16":
        return str(model)
    out = pathlib.Path(model).with_name(pathlib.Path(model).name.replace(".f16.", f".{name}."))
    if name == "f32":   # from the checkpoint, not upcast f16
        if not out.exists():
            from build_test_model import checkpoint_dir
            from claude_chats.models.convert import convert

            convert(checkpoint_dir(), str(out), outtype="f32", name="all-MiniLM-L6-v2")
        return str(out)
    if not out.exists():
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = FTYPES[name]
        params.nthread = 2
        rc = llama_cpp.llama_model_quantize(str(model).encode(), str(out).encode(), params)
        if rc != 0:
            raise RuntimeError(f"llama_model_quantize to {name} returned {rc}")
    return str(out)


def cmd_quant(args):
    """Each type with flash attention off and on, against f16 without it (today's vectors)."""
    data = corpus_chunks(args.model)
    chunks = sample(data["chunks"], args.texts)
    texts = [c["text"] for c in chunks]
    models = {name: quantized(args.model, name) for name in args.types}
    configs = {}
    for name, path in models.items():
        for fa in (False, True):
            configs[f"{name}{' FA' if fa else ''}"] = (path, open_llama(path, threads=args.threads, flash_attn=fa))
    first = next(iter(configs.values()))[1]
    tokens = tokenize_all(first, texts)
    n = sum(map(len, tokens))
    print(f"{len(texts)} corpus chunks, {n:,d} tokens, {args.threads} thread(s), best/median of {args.repeat}, "
          f"interleaved; FA = flash attention; q8_0/q4_0 without extra buffer types (AMX crashes) "
          f"(start {load()})")
    vectors = {}
    for name, (_, llm) in configs.items():
        v, _ = embed_tokens(llm, tokens)
        vectors[name] = v / np.linalg.norm(v, axis=1, keepdims=True)
    best = compare({name: (lambda llm=llm: embed_tokens(llm, tokens)) for name, (_, llm) in configs.items()},
                   args.repeat)
    f16 = vectors["f16"]
    ref = vectors.get("f32", f16)
    base = best["f16"][1]
    print(f"{'type':9s} {'file MB':>7s} {'best s':>7s} {'median s':>8s} {'tokens/s':>8s} {'vs f16':>6s} "
          f"{'CPU s':>6s} {'per CPU s':>9s} {'cos vs f16 mean':>15s} {'min':>7s} {'cos vs f32 mean':>15s} {'min':>7s} "
          f"{'top-10 vs f16':>13s} {'max 1-cos vs f16':>16s}")
    for name, (path, _) in configs.items():
        cos16 = np.sum(vectors[name] * f16, axis=1)
        cos32 = np.sum(vectors[name] * ref, axis=1)
        wall, med, cpu = best[name]
        agree = topk_overlap(vectors[name], f16, 10)
        print(f"{name:9s} {os.path.getsize(path) / 1e6:7.1f} {wall:7.2f} {med:8.2f} {n / med:8.0f} "
              f"x{base / med:5.2f} {cpu:6.2f} {n / cpu:9.0f} {cos16.mean():15.6f} {cos16.min():7.4f} "
              f"{cos32.mean():15.6f} {cos32.min():7.4f} {agree:13.3f} {1 - cos16.min():16.2e}")
    print(f"  top-10 vs f16: overlap of each chunk's 10 nearest among the {len(texts)} chunks")
    print(f"end {load()}")


def topk_overlap(a, b, k):
    sa, sb = a @ a.T, b @ b.T
    np.fill_diagonal(sa, -2)
    np.fill_diagonal(sb, -2)
    ta, tb = np.argsort(-sa, axis=1)[:, :k], np.argsort(-sb, axis=1)[:, :k]
    return float(np.mean([len(set(x) & set(y)) / k for x, y in zip(ta, tb)]))


# -- batch shape ------------------------------------------------------------------------------------

def cmd_batch(args):
    data = corpus_chunks(args.model)
    texts = [c["text"] for c in sample(data["chunks"], args.texts)]
    model = quantized(args.model, args.type)
    llms = {nb: open_llama(model, threads=args.threads, n_batch=nb, flash_attn=args.flash_attn) for nb in args.n_batch}
    first = next(iter(llms.values()))
    tokens = tokenize_all(first, texts)
    order = sorted(range(len(tokens)), key=lambda i: len(tokens[i]))
    by_length = [tokens[i] for i in order]
    n = sum(map(len, tokens))
    runs = {}
    for nb, llm in llms.items():
        runs[f"n_batch {nb:5d}, message order"] = (lambda llm=llm: embed_tokens(llm, tokens))
        runs[f"n_batch {nb:5d}, sorted by length"] = (lambda llm=llm: embed_tokens(llm, by_length))
    for cap in args.max_seqs:
        runs[f"n_batch {args.n_batch[0]:5d}, <= {cap} texts/decode"] = (
            lambda llm=llms[args.n_batch[0]], cap=cap: embed_tokens(llm, tokens, max_seqs=cap))
    runs["Llama.embed(), strings, n_batch %d" % args.n_batch[0]] = (
        lambda llm=llms[args.n_batch[0]]: llm.embed(texts, normalize=False, truncate=False))
    decodes = {}
    for name, fn in runs.items():
        result = fn()
        decodes[name] = result[1] if isinstance(result, tuple) else None
    print(f"{len(texts)} corpus chunks, {n:,d} tokens, {args.type}, {args.threads} thread(s), flash attention "
          f"{'on' if args.flash_attn else 'off'}, best/median of "
          f"{args.repeat} interleaved (start {load()})")
    best = compare(runs, args.repeat)
    base, base_cpu = best[next(iter(runs))][1], best[next(iter(runs))][2]
    for name, (wall, med, cpu) in best.items():
        d = decodes[name]
        print(f"  {name:40s} best {wall:6.2f} s median {med:6.2f} s {n / med:7.0f} tokens/s x{base / med:4.2f}; "
              f"CPU {cpu:6.2f} s {n / cpu:5.0f} per CPU s x{base_cpu / cpu:4.2f}"
              + (f"  {d} decodes, {n / d:5.0f} tokens/decode" if d else ""))
    # tokenization cost, for scale
    llm = first
    wall, cpu, _ = timed(lambda: tokenize_all(llm, texts))
    print(f"  tokenizing the {len(texts)} texts once: {wall:.3f} s ({1e6 * wall / n:.2f} µs/token)")
    print(f"end {load()}")


# -- chunk length -----------------------------------------------------------------------------------

def cmd_chunklen(args):
    """Long tool results cut into windows of L tokens (10% overlap), packed into 512-token decodes
    (and, for L < 512, also into decodes of exactly one window's size)."""
    data = corpus_chunks(args.model)
    model = quantized(args.model, args.type)
    llm = open_llama(model, threads=args.threads, n_batch=512, flash_attn=args.flash_attn)
    long_texts = [m["content"] for m in data["messages"] if m["kind"] == "tool_result" and len(m["content"]) > 4000]
    long_texts = long_texts[:args.texts]
    stream = [llm.tokenize(t.encode("utf-8"), add_bos=False) for t in long_texts]
    cls, sep = llm.token_bos(), llm.token_eos()
    chars = sum(len(t) for t in long_texts)
    content_tokens = sum(map(len, stream))
    runs, shapes = {}, {}
    for window in args.windows:
        body = window - 2
        step = max(1, int(body * 0.9))
        pieces = [[cls, *toks[i:i + body], sep] for toks in stream for i in range(0, max(1, len(toks) - body // 10), step)]
        shapes[window] = (len(pieces), sum(map(len, pieces)))
        runs[window] = (lambda p=pieces: embed_tokens(llm, p))
    print(f"{len(long_texts)} tool results over 4,000 chars: {chars:,d} chars, {content_tokens:,d} tokens "
          f"({chars / content_tokens:.2f} chars/token), {args.type}, {args.threads} thread(s), n_batch 512, "
          f"flash attention {'on' if args.flash_attn else 'off'} "
          f"(start {load()})")
    best = compare(runs, args.repeat)
    for window, (wall, med, cpu) in best.items():
        count, total = shapes[window]
        print(f"  window {window:4d} tokens: {count:5d} chunks, {total:7,d} tokens embedded "
              f"(x{total / content_tokens:.3f} of the content), median {med:6.2f} s, {total / med:6.0f} tokens/s; "
              f"CPU {cpu:6.2f} s: {total / cpu:5.0f} tokens and {chars / cpu:5.0f} content chars per CPU s, "
              f"{1000 * cpu / count:6.1f} CPU ms/chunk")
    print(f"end {load()}")


# -- the model's own limit --------------------------------------------------------------------------

def cmd_limit(args):
    """One decode of each shape, repeated ``--decodes`` times: one sequence of 8..512 tokens, and
    512 tokens packed as 2 x 256 .. 16 x 32 (what ``Llama.embed`` does with short texts)."""
    model = quantized(args.model, args.type)
    words = ("the migration test fails when the database connection pool is closed before the fixture "
             "tears down so we retry with a fresh session").split()
    print(f"{args.type}, decodes of 512 tokens, best/median of {args.repeat} (start {load()})")
    for threads in args.thread_counts:
        llm = open_llama(model, threads=threads, flash_attn=args.flash_attn)
        base = llm.tokenize(" ".join(words * 60).encode())
        shapes = {f"1 x {n}": [base[:n]] for n in (512, 256, 128, 64, 32, 16, 8)}
        shapes.update({f"{512 // n} x {n}": [base[:n]] * (512 // n) for n in (256, 128, 64, 32)})
        embed_tokens(llm, shapes["1 x 512"])
        best = compare({k: (lambda p=p: [embed_tokens(llm, p) for _ in range(args.decodes)]) for k, p in shapes.items()},
                       args.repeat)
        for shape, (wall, med, cpu) in best.items():
            n = sum(map(len, shapes[shape])) * args.decodes
            print(f"  {threads} thread(s), {shape:8s}: {n / wall:7.0f} tokens/s best, {n / med:7.0f} median, "
                  f"{n / cpu:7.0f} per CPU s, {1000 * med / args.decodes:7.2f} ms/decode, "
                  f"{1000 * cpu / args.decodes:7.2f} CPU ms/decode, CPU/wall {cpu / wall:.2f}")
        llm.close()
    print(f"end {load()}")


# -- per-kind policies ------------------------------------------------------------------------------

def cmd_policy(args):
    """Tokens and chunks each ``embed_text`` value would embed over the corpus (the recipe's own code:
    ``recipe_for``, its per-kind limits, the context prefix, the chunker at 512 tokens), and the
    expected speed-up from the tokens alone (at a constant cost per token)."""
    data = corpus_chunks(args.model)
    from claude_chats.models.chunking import chunk_text
    from claude_chats.models.llama import LlamaProvider
    from claude_chats.models.recipe import _Prefixed, head, recipe_for

    provider = LlamaProvider(model=args.model, threads=1)
    values = ["context"]
    values += [f"context,tool_result={n}" for n in args.heads]
    values += ["context,thinking=0"]
    values += [f"context,thinking=0,tool_result={n}" for n in args.heads]
    values += [f"context,command={n},meta={n},thinking=0,tool_result={n}" for n in args.heads]
    bare_kinds = ("tool_use", "tool_result")
    values += [f"context,thinking=0,tool_result={n} + no previous text before tool_use/tool_result"
               for n in args.heads]   # not a setting: the cost of leaving the previous message out there
    rows = []
    for value in values:
        recipe = recipe_for(value.split(" + ")[0])
        bare = " + " in value
        chunks = tokens = 0
        per_kind = {}
        for m in data["messages"]:
            limit = recipe.limit(m["kind"])
            content = m["content"] if limit is None else head(m["content"], limit)
            before = m["prefix"].split("\n")[-1] if bare and m["kind"] in bare_kinds else m["prefix"]
            pieces = chunk_text(content, _Prefixed(provider, before)) if content.strip() else []
            t = sum(provider.count_tokens(before + p) for _, _, p in pieces)
            chunks += len(pieces)
            tokens += t
            per_kind[m["kind"]] = per_kind.get(m["kind"], 0) + t
        rows.append((value, chunks, tokens, per_kind))
    base_tokens = rows[0][2]
    print(f"{len(data['messages'])} messages of the corpus; tokens as the model counts them (context prefix "
          f"included), chunks of <= 512 tokens")
    print(f"{'embed_text':86s} {'chunks':>6s} {'tokens':>9s} {'x fewer':>7s}  tool_result / text / tool_use / thinking tokens")
    for value, chunks, tokens, per_kind in rows:
        print(f"{value:86s} {chunks:6d} {tokens:9,d} {base_tokens / tokens:6.2f}x  "
              f"{per_kind.get('tool_result', 0):,d} / {per_kind.get('text', 0):,d} / {per_kind.get('tool_use', 0):,d}"
              f" / {per_kind.get('thinking', 0):,d}")
    prefix_tokens = sum(provider.count_tokens(m["prefix"]) for m in data["messages"])
    print(f"the context prefixes alone: {prefix_tokens:,d} tokens once per message "
          f"({100 * prefix_tokens / base_tokens:.1f}% of today's tokens; repeated on every chunk)")
    provider.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["texts", "threads", "_threads_worker", "idle", "quant", "batch",
                                            "chunklen", "limit", "policy"])
    parser.add_argument("--model", type=pathlib.Path, help="the f16 GGUF (default: the test model)")
    parser.add_argument("--texts", type=int, default=120)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--nice", type=int, default=0)
    parser.add_argument("--type", default="f16", choices=sorted(FTYPES))
    parser.add_argument("--types", nargs="+", default=["f16", "q8_0", "bf16", "f32", "q4_0"])
    parser.add_argument("--thread-counts", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--burners", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--nices", nargs="+", type=int, default=[0, 10])
    parser.add_argument("--n-batch", nargs="+", type=int, default=[512, 1024, 2048])
    parser.add_argument("--max-seqs", nargs="+", type=int, default=[1, 4])
    parser.add_argument("--windows", nargs="+", type=int, default=[128, 256, 384, 512])
    parser.add_argument("--heads", nargs="+", type=int, default=[300, 500, 1000, 2000])
    parser.add_argument("--decodes", type=int, default=20)
    parser.add_argument("--refresh", action="store_true")
    parser.add_argument("--flash-attn", action="store_true")
    parser.add_argument("--budget", type=float, default=40.0, help="threads: seconds per run at most")
    parser.add_argument("--idle-below", type=float, default=0.3, help="idle: others' load, in cores")
    parser.add_argument("--wait", type=float, default=1800, help="idle: seconds to wait at most")
    parser.add_argument("--pairs", type=int, default=3, help="idle: measurements to take")
    args = parser.parse_args()
    args.model = args.model or pathlib.Path(test_model())
    if args.command == "_threads_worker":
        return threads_worker(args)
    globals()[f"cmd_{args.command}"](args)


if __name__ == "__main__":
    main()
