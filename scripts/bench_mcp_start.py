#!/usr/bin/env python3
"""MCP server start-up over stdio: time to the ``initialize`` and ``tools/list`` answers.

Starts ``chats mcp`` (the console script beside this Python) N times and, in
the same run, interleaved in a new random order each round, the floors
``python -c pass`` and ``python -c 'import fastmcp'`` (time to exit) and a bare
FastMCP server with three trivial tools. Each server is driven as Claude Code
2.1.332 drives a stdio server (docs/claude-code-internals.md; the messages are
``claude_chats.mcp.answers.opening``'s): in the modern protocol era (the
default) the handshake is the ``server/discover`` request, then ``tools/list``,
``prompts/list`` and ``resources/list``; in the legacy era (``--legacy``, as
with ``MCP_PROTOCOL_NEGOTIATION=legacy``) ``initialize``, then the lists. Then a
first ``tools/call`` (a cheap tool), and the stop the way Claude Code stops a
server: SIGINT, SIGTERM 100 ms later, SIGKILL 400 ms after that. "initialize"
below is the handshake's answer in either era. Prints p50/p95 of each, the
ratio of each server's p50 to the ``import fastmcp`` floor, how each server
ended, and the load average.

``--load K`` runs K CPU-bound processes beside it for the whole run. Two more
``chats mcp`` cases remove the saved answers (``mcp-answers.json``) before each
start, as after an install or upgrade: one with the answers shipped in the
package, one from a copy of the package without them (the start before they
were shipped). ``--compare DIR`` adds ``chats mcp`` run from another copy of the
package (``git archive HEAD claude_chats | tar -x -C DIR``), interleaved, so a
change is measured against its baseline under the same load.

The budget (issue 13): ``chats mcp`` initialize p50 within 1.2x of
``import fastmcp``, quiet and with ``--load 2``, and never over 2 s.

    .venv/bin/python scripts/bench_mcp_start.py [--runs 20] [--load 2] [--legacy] [--compare DIR] [--json]
"""

import argparse
import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

from claude_chats.mcp import answers

BARE_SERVER = textwrap.dedent('''
    from fastmcp import FastMCP

    server = FastMCP("bare")

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool
    def echo(text: str) -> str:
        return text

    @server.tool
    def now() -> float:
        return 0.0

    server.run(transport="stdio", show_banner=False, log_level="WARNING")
''')

BURN = "while True: pass"
BARE_CALL = ("now", {})
CHATS_CALL = ("list_recent_sessions", {"limit": 1})   # the first call waits for the stores to open
PROBE_TIMEOUT = 3.0     # Claude Code's stdio probe timeout (min(3 s, MCP_TIMEOUT / 3))
CALL_ID = 90
STOP_STEPS = ((signal.SIGINT, 0.1), (signal.SIGTERM, 0.4), (signal.SIGKILL, 5.0))   # Claude Code's close


class Lines:
    """Newline-delimited JSON-RPC from a child's stdout, with a deadline per answer."""

    def __init__(self, proc):
        self.proc, self.buf = proc, b""

    def answer(self, request_id, timeout):
        """Wait for the response to ``request_id``; other lines (notifications, logs) are skipped."""
        deadline = time.perf_counter() + timeout
        while True:
            while b"\n" not in self.buf:
                left = deadline - time.perf_counter()
                ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, left))
                if not ready:
                    return None
                chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    raise RuntimeError(f"the server closed stdout (exit {self.proc.poll()})")
                self.buf += chunk
            line, self.buf = self.buf.split(b"\n", 1)
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("id") == request_id:
                return message


def send(proc, message):
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def floor_run(cmd, env):
    """Wall seconds of a command run to its end."""
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdin=subprocess.DEVNULL)
    return {"exit": time.perf_counter() - start}


def server_run(cmd, env, era, call=None):
    """Seconds from spawn to the handshake, tools/list and first tools/call answers, then the stop."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    lines, result = Lines(proc), {}
    (handshake, _), (rest, _) = answers.opening(era)
    try:
        for message in handshake:
            send(proc, message)
        answered = lines.answer(handshake[0]["id"], PROBE_TIMEOUT if era == answers.MODERN else 60)
        if answered is None and era == answers.MODERN:   # Claude Code's probe timed out: it goes on waiting
            result["probe_timed_out"] = True
            answered = lines.answer(handshake[0]["id"], 60)
        if answered is None or "result" not in answered:
            raise RuntimeError(f"no handshake answer: {answered}")
        result["initialize"] = time.perf_counter() - start
        for message in rest:
            send(proc, message)
        listing = next(m for m in rest if m.get("method") == "tools/list")
        listed = lines.answer(listing["id"], 60)
        if listed is None or "result" not in listed:
            raise RuntimeError(f"no tools/list answer: {listed}")
        result["tools_list"] = time.perf_counter() - start
        result["tools"] = len(listed["result"]["tools"])
        if call:
            params = {"name": call[0], "arguments": call[1]}
            if era == answers.MODERN:
                params["_meta"] = answers.MODERN_META
            send(proc, {"jsonrpc": "2.0", "id": CALL_ID, "method": "tools/call", "params": params})
            called = lines.answer(CALL_ID, 60)
            if called is None or called.get("result", {}).get("isError", True):
                raise RuntimeError(f"the tool call failed: {called}")
            result["first_call"] = time.perf_counter() - start
    finally:
        result.update(stop(proc))
    return result


def first_start(cmd, env, era, call):
    """A start with no saved answers (the first after an install or upgrade)."""
    try:
        os.remove(os.path.join(env["CLAUDE_CHATS_HOME"], "mcp-answers.json"))
    except FileNotFoundError:
        pass
    return server_run(cmd, env, era, call)


def stop(proc):
    """Claude Code's close of a stdio server: SIGINT, then SIGTERM, then SIGKILL."""
    start = time.perf_counter()
    for sig, wait in STOP_STEPS:
        if proc.poll() is not None:
            break
        proc.send_signal(sig)
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            continue
        return {"stop": time.perf_counter() - start, "stopped_by": sig.name, "returncode": proc.returncode}
    proc.wait()
    return {"stop": time.perf_counter() - start, "stopped_by": "exited", "returncode": proc.returncode}


def home(env, work, name):
    """``env`` with a data dir of its own."""
    folder = os.path.join(work, name)
    os.makedirs(folder, mode=0o700)
    return dict(env, CLAUDE_CHATS_HOME=folder)


def package_copy(work, without):
    """A folder holding a copy of claude_chats without the file ``without`` (for PYTHONPATH)."""
    import claude_chats

    folder = os.path.join(work, f"without-{without}")
    target = os.path.join(folder, "claude_chats")
    shutil.copytree(os.path.dirname(claude_chats.__file__), target, ignore=shutil.ignore_patterns("__pycache__"))
    for root, _, files in os.walk(target):
        if without in files:
            os.remove(os.path.join(root, without))
    subprocess.run([sys.executable, "-m", "compileall", "-q", folder], check=True)
    return folder


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else float("nan")


def burners(count):
    return [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(count)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--load", type=int, default=0, metavar="K", help="CPU-bound processes run beside it")
    parser.add_argument("--compare", metavar="DIR", help="a folder holding another claude_chats package")
    parser.add_argument("--legacy", action="store_true", help="the legacy protocol era: initialize first")
    parser.add_argument("--model", help="CLAUDE_CHATS_MODEL for chats mcp (default: the configured one)")
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON too")
    args = parser.parse_args()
    chats = shutil.which("chats", path=os.path.dirname(sys.executable))
    if not chats:
        raise SystemExit("chats is not installed beside this Python (pip install -e .)")
    import claude_chats
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.dirname(claude_chats.__file__)], check=True)
    work = tempfile.mkdtemp(prefix="bench-mcp-")
    bare = os.path.join(work, "bare_server.py")
    with open(bare, "w") as fh:
        fh.write(BARE_SERVER)
    env = dict(os.environ, CLAUDE_CHATS_HOME=os.path.join(work, "home"), CLAUDE_CHATS_SYNC_INTERVAL="0")
    env.pop("PYTHONPATH", None)
    if args.model:
        env["CLAUDE_CHATS_MODEL"] = args.model
    os.makedirs(env["CLAUDE_CHATS_HOME"], mode=0o700)
    era = answers.LEGACY if args.legacy else answers.MODERN
    cold = home(env, work, "home-cold")
    unshipped = dict(home(env, work, "home-unshipped"), PYTHONPATH=package_copy(work, without="answers.json"))
    cases = {
        "python -c pass": lambda: floor_run([sys.executable, "-c", "pass"], env),
        "python -c 'import fastmcp'": lambda: floor_run([sys.executable, "-c", "import fastmcp"], env),
        "bare FastMCP, 3 tools": lambda: server_run([sys.executable, bare], env, era, BARE_CALL),
        "chats mcp": lambda: server_run([chats, "mcp"], env, era, CHATS_CALL),
        "chats mcp, nothing saved (shipped)": lambda: first_start([chats, "mcp"], cold, era, CHATS_CALL),
        "chats mcp, nothing saved or shipped": lambda: first_start([chats, "mcp"], unshipped, era, CHATS_CALL),
    }
    if args.compare:
        subprocess.run([sys.executable, "-m", "compileall", "-q", args.compare], check=True)
        other = dict(home(env, work, "home2"), PYTHONPATH=os.path.abspath(args.compare))
        cases["chats mcp, code from --compare"] = lambda: server_run([chats, "mcp"], other, era, CHATS_CALL)
    for run in cases.values():   # warm the page cache and the .pyc files; not measured
        run()
    hogs = burners(args.load)
    results = {name: [] for name in cases}
    try:
        time.sleep(1.0 if hogs else 0)
        load_before = os.getloadavg()
        order = list(cases)
        for _ in range(args.runs):
            random.shuffle(order)
            for name in order:
                results[name].append(cases[name]())
        load_after = os.getloadavg()
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    report(args, results, load_before, load_after)
    shutil.rmtree(work, ignore_errors=True)


def report(args, results, load_before, load_after):
    print(f"MCP start benchmark: {args.runs} runs each, interleaved; python {sys.version.split()[0]}, "
          f"{os.cpu_count()} cores, {args.load} CPU-bound processes beside it, "
          f"{'legacy era (initialize first)' if args.legacy else 'modern era (server/discover first)'}")
    print(f"load average (1, 5, 15 min) before: {' '.join(f'{x:.2f}' for x in load_before)}; "
          f"after: {' '.join(f'{x:.2f}' for x in load_after)}")
    floor = pct([r["exit"] for r in results["python -c 'import fastmcp'"]], .5)
    print(f"{'what':38} {'measured':>10} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'p50 / import fastmcp':>21}")
    for name, runs in results.items():
        for key in ("exit", "initialize", "tools_list", "first_call"):
            values = [r[key] for r in runs if key in r]
            if not values:
                continue
            ratio = f"{pct(values, .5) / floor:.2f}x" if key in ("exit", "initialize") else ""
            print(f"{name:38} {key:>10} {1000 * pct(values, .5):8.0f} {1000 * pct(values, .95):8.0f} "
                  f"{1000 * max(values):8.0f} {ratio:>21}")
    for name, runs in results.items():
        stops = [r for r in runs if "stop" in r]
        if stops:
            by = {}
            for r in stops:
                by[r["stopped_by"]] = by.get(r["stopped_by"], 0) + 1
            timed_out = sum(1 for r in stops if r.get("probe_timed_out"))
            print(f"{name}: stopped by {', '.join(f'{k} x{v}' for k, v in sorted(by.items()))}; "
                  f"stop p50 {1000 * pct([r['stop'] for r in stops], .5):.0f} ms, "
                  f"max {1000 * max(r['stop'] for r in stops):.0f} ms"
                  + (f"; probe timed out {timed_out}x" if timed_out else ""))
    chats = pct([r["initialize"] for r in results["chats mcp"]], .5)
    worst = max(r["initialize"] for r in results["chats mcp"])
    print(f"budget: chats mcp initialize p50 {chats / floor:.2f}x import fastmcp (budget 1.20x), "
          f"max {worst:.2f} s (budget 2 s)")
    if args.json:
        print(json.dumps({"load_before": load_before, "load_after": load_after, "results": results}))


if __name__ == "__main__":
    main()
