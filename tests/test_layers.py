"""The architecture, checked from the imports themselves (as basic-memory's boundary test does).

Every ``import`` and ``from ... import`` in the package counts, at the top of a
module or inside a function: a lazy import still ties the two modules. The rooms
(DESIGN.md, "Layout"): a ground floor that imports nothing of the package but
itself; ``models`` (providers only); the search kernel; the two stores side by
side; sync; and the commands on top. The hook's import path is checked by
running the hook as a fresh process.
"""

import ast
import json
import pathlib
import subprocess
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "claude_chats"

GROUND = {"errors", "paths", "jsonl", "redact", "transcript", "rawlines", "linedict", "hosts", "times", "records",
          "faults", "words", "claudecode", "capture", "scrub"}
STORES = ("localstore", "pgstore")
ABOVE_STORES = ("sync", "stores", "purge", "pgredact", "restore", "config", "status", "doctor", "install", "evaluate",
                "hook", "mcp", "ui", "cli")


def module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def _resolve(target):
    """The package module ``target`` names (a module, or a name inside one)."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def imports_of(name):
    """The package modules ``name`` imports, anywhere in it."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # ``from . import x`` imports the submodule x when there is one, else a name of the package
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in MODULES else module for a in node.names]
        else:
            continue
        found.update(t for t in map(_resolve, targets) if t and t.startswith("claude_chats") and t != name)
    return found


GRAPH = {name: imports_of(name) for name in MODULES}


def room(name):
    """``claude_chats.localstore.db`` -> ``localstore``; ``claude_chats.errors`` -> ``errors``."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def offending(source_rooms, forbidden_rooms):
    return sorted(f"{name} -> {target}" for name, targets in GRAPH.items() if room(name) in source_rooms
                  for target in targets if room(target) in forbidden_rooms)


def test_the_graph_is_read():
    # the test must see the imports it judges: the hook's writer imports the parser, sync the stores
    assert "claude_chats.transcript" in GRAPH["claude_chats.localstore.writer"]
    assert "claude_chats.localstore.outbox" in GRAPH["claude_chats.sync.engine"]
    assert "claude_chats.pgstore.search" in GRAPH["claude_chats.stores"]


def test_no_import_cycle():
    assert cycles(GRAPH) == []


def test_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_ground_floor_imports_only_the_ground_floor():
    assert offending(GROUND, set(MODULES_ROOMS) - GROUND) == []


def test_models_import_no_store_no_sync_no_config():
    assert offending({"models"}, {*STORES, "search", *ABOVE_STORES}) == []


def test_stores_import_neither_each_other_nor_what_is_above_them():
    assert offending({"localstore"}, {"pgstore", *ABOVE_STORES}) == []
    assert offending({"pgstore"}, {"localstore", *ABOVE_STORES}) == []


def test_search_imports_no_store():
    assert offending({"search"}, {*STORES, *ABOVE_STORES}) == []
    kernel = GRAPH["claude_chats.search.core"]
    assert not {t for t in kernel if room(t) == "models"}, "the kernel needs no model"


def test_both_stores_meet_only_above_them():
    """Searching both is ``stores``' job; purging both, ``purge``'s; restoring from either, ``restore``'s;
    checking both, status' and doctor's."""
    both = sorted(name for name, targets in GRAPH.items() if {room(t) for t in targets} >= set(STORES))
    assert "claude_chats.stores" in both
    assert [name for name in both if room(name) not in ABOVE_STORES] == []


MODULES_ROOMS = {room(name) for name in MODULES}

# What the hook may import from the package (a turn that stores messages and checks the
# background sync). Growing this list costs every Claude Code turn: measure with bench_hook.py first.
HOOK_PATH = {"claude_chats", "claude_chats.hook", "claude_chats.jsonl", "claude_chats.paths",
             "claude_chats.times", "claude_chats.transcript", "claude_chats.rawlines", "claude_chats.capture",
             "claude_chats.localstore", "claude_chats.localstore.db", "claude_chats.localstore.texts",
             "claude_chats.localstore.uuids", "claude_chats.localstore.stamps", "claude_chats.localstore.writer",
             "claude_chats.localstore.recall", "claude_chats.localstore.hints",
             "claude_chats.sync", "claude_chats.sync.background", "claude_chats.sync.lock"}


def hook_imports(tmp_path):
    transcript = tmp_path / "s1.jsonl"
    transcript.write_text(json.dumps({"type": "user", "uuid": "u1", "sessionId": "s1", "cwd": "/tmp",
                                      "timestamp": "2026-01-01T00:00:00.000Z",
                                      "message": {"role": "user", "content": "hello"}}) + "\n")
    payload = json.dumps({"session_id": "s1", "transcript_path": str(transcript), "hook_event_name": "Stop"})
    env = {"CLAUDE_CHATS_HOME": str(tmp_path / "home"), "CLAUDE_CHATS_SYNC_INTERVAL": "0",
           "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "claude_chats.hook"], input=payload.encode(),
                          capture_output=True, env=env, timeout=60)
    assert proc.returncode == 0 and proc.stdout == b""
    names = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.decode().splitlines()
             if line.startswith("import time:")]
    assert (tmp_path / "home" / "journal.db").exists() and not (tmp_path / "home" / "logs").exists()
    return set(names)


def test_the_hook_imports_no_more_than_its_path(tmp_path):
    imported = hook_imports(tmp_path)
    ours = {name for name in imported if name.startswith("claude_chats")}
    assert ours - HOOK_PATH == set()
    assert {"claude_chats.localstore.writer", "claude_chats.transcript"} <= ours
    heavy = {"json", "re", "zlib", "numpy", "psycopg", "fastmcp", "sqlite_vec", "tomllib", "llama_cpp", "enum", "signal"}
    assert heavy & imported == set()


@pytest.mark.parametrize("name", sorted(n for n in MODULES if room(n) in STORES))
def test_a_store_module_imports_alone(name):
    """Each store module imports in a fresh interpreter without the other store being imported."""
    other = "pgstore" if room(name) == "localstore" else "localstore"
    code = f"import importlib, sys; importlib.import_module({name!r}); " \
           f"print(any(m.startswith('claude_chats.{other}') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"


def test_a_search_of_the_journal_alone_imports_no_postgres_driver(tmp_path):
    """Without a database configured, ``chats search`` (as the MCP server's stores) never imports psycopg
    or the Postgres store: 50-60 ms of every such process."""
    env = {"CLAUDE_CHATS_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    code = ("import sys; from claude_chats.cli import main\n"
            "try:\n    main(['search', 'anything', '--mode', 'fulltext'])\nexcept SystemExit:\n    pass\n"
            "from claude_chats.stores import open_searcher\nopen_searcher(use_postgres=True).close()\n"
            "sys.stderr.write(' '.join(sorted(sys.modules)))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    loaded = set(proc.stderr.split())
    assert "claude_chats.localstore.search" in loaded, proc.stderr[-2000:]
    assert not {m for m in loaded if m.startswith(("psycopg", "claude_chats.pgstore"))}
