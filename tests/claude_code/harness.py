"""Drive the real Claude Code CLI against the fake API, with claude-chats installed.

Pieces, each usable on its own (the fixtures in conftest.py put them together):

- ``ensure_claude_code()``: the pinned CLI (``CLAUDE_CODE_VERSION``), installed with
  npm into ``~/.cache/claude-chats-test/claude-code/<version>/`` once, then reused.
  The npm package is a launcher around a native binary (platform package
  ``@anthropic-ai/claude-code-linux-x64``): no Node.js runs it, so Node 20's
  EBADENGINE warning (``engines: node >= 22``) is harmless. Raises
  ``Unavailable`` with the reason when npm or the registry is not there.
- ``Scratch``: an isolated HOME (``~/.claude.json`` says onboarding done, the
  dummy key approved, the project folder trusted), a project folder, a ``claude``
  wrapper on PATH, the environment Claude Code and the hooks run with, and
  helpers: ``install()`` (``chats install`` as a user runs it), ``probe()`` (wrap
  the hooks so each run is logged and the journal snapshotted), ``print_turn()``
  (``claude -p``), ``interactive()`` (a tmux session), ``chats()``, and readers
  of the transcripts Claude Code wrote.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid as uuidlib
from dataclasses import dataclass, field

CLAUDE_CODE_VERSION = "2.1.332"  # the one place the pinned version lives
NPM_PACKAGE = "@anthropic-ai/claude-code"
CACHE = pathlib.Path(os.environ.get("CLAUDE_CHATS_TEST_CACHE", "~/.cache/claude-chats-test")).expanduser()
HERE = pathlib.Path(__file__).resolve().parent
PROJECT_ROOT = HERE.parent.parent
PROBE = HERE / "probe_hook.py"
MCP_SERVER_NAME = "conversation-memory"
LOADED = 180   # seconds a wait may take before it fails: enough for 2 cores at a load average of 6-8
API_KEY = "dummy"  # approved in ~/.claude.json by its last 20 characters (here: all of it)


class Unavailable(Exception):
    """What the tests need is not on this machine (the message says what and why)."""


def unavailable(reason: str):
    """Skip the running test with ``reason`` (under pytest), else raise Unavailable."""
    if "pytest" in sys.modules:
        import pytest

        pytest.skip(reason)
    raise Unavailable(reason)


# -- the pinned CLI ----------------------------------------------------------------------


def _platform_package() -> str:
    machine = os.uname().machine
    arch = {"x86_64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    musl = not os.path.exists("/lib64/ld-linux-x86-64.so.2") and not os.path.exists("/lib/ld-linux-aarch64.so.1")
    system = "darwin" if sys.platform == "darwin" else "linux"
    return f"{NPM_PACKAGE}-{system}-{arch}{'-musl' if musl and system == 'linux' else ''}"


def _binary_in(prefix: pathlib.Path) -> pathlib.Path | None:
    """The native binary of an install under ``prefix`` (platform package first)."""
    modules = prefix / "node_modules"
    for candidate in (modules / _platform_package() / "claude", modules / NPM_PACKAGE / "bin" / "claude.exe"):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            with open(candidate, "rb") as fh:
                magic = fh.read(4)
            if magic in (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe"):
                return candidate
    return None


def _version_of(binary: pathlib.Path) -> str:
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "HOME": str(CACHE)})
    return out.stdout.strip().split(" ")[0]


def ensure_claude_code(version: str = CLAUDE_CODE_VERSION) -> pathlib.Path:
    """Path of the pinned Claude Code binary, installing it with npm the first time."""
    prefix = CACHE / "claude-code" / version
    binary = _binary_in(prefix)
    if binary and _version_of(binary) == version:
        return binary
    npm = shutil.which("npm")
    if not npm:
        raise Unavailable("npm is not on PATH: cannot install " f"{NPM_PACKAGE}@{version}")
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f".{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel sessions install once
        binary = _binary_in(prefix)
        if not (binary and _version_of(binary) == version):
            (prefix / "package.json").write_text(json.dumps({"name": "claude-code-pinned", "private": True}))
            try:
                proc = subprocess.run(
                    [npm, "install", "--no-audit", "--no-fund", "--no-save", "--prefix", str(prefix),
                     f"{NPM_PACKAGE}@{version}"],
                    capture_output=True, text=True, timeout=600)
            except subprocess.TimeoutExpired:
                raise Unavailable(f"npm install {NPM_PACKAGE}@{version} did not finish in 600 s "
                                  "(registry unreachable?)") from None
            binary = _binary_in(prefix)
            if proc.returncode != 0 or binary is None:
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
                raise Unavailable(f"npm install {NPM_PACKAGE}@{version} failed (exit {proc.returncode}): "
                                  + " | ".join(tail))
    got = _version_of(binary)
    if got != version:
        raise Unavailable(f"{binary} says version {got!r}, not {version}")
    return binary


def chats_bin(name: str = "chats") -> pathlib.Path:
    """A console script of the claude-chats under test (beside this Python)."""
    path = pathlib.Path(sys.executable).parent / name
    if not path.exists():
        raise Unavailable(f"{path} not found: install the project (pip install -e .) in this Python")
    return path


# -- transcripts ---------------------------------------------------------------------------


def read_jsonl(path) -> list[dict]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                out.append(json.loads(line))
    return out


def text_blocks(record: dict) -> list[str]:
    """The text of a user/assistant record's text blocks (a string content counts as one)."""
    content = (record.get("message") or {}).get("content")
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]


def blocks_of(record: dict, kind: str) -> list[dict]:
    content = (record.get("message") or {}).get("content")
    return [b for b in content or [] if isinstance(b, dict) and b.get("type") == kind] if isinstance(content, list) else []


@dataclass
class Transcript:
    """What Claude Code wrote for one session, read independently of the project's parser."""

    path: pathlib.Path
    records: list[dict]

    @property
    def session_id(self) -> str:
        return self.path.stem

    def of_type(self, kind: str, subtype: str | None = None) -> list[dict]:
        return [r for r in self.records if r.get("type") == kind and (subtype is None or r.get("subtype") == subtype)]

    def prompts(self) -> list[str]:
        """Prompts the person typed (user lines with text, not meta, not tool results, not summaries)."""
        out = []
        for r in self.of_type("user"):
            if r.get("isMeta") or r.get("isCompactSummary") or blocks_of(r, "tool_result"):
                continue
            for t in text_blocks(r):
                if t.strip() and not t.lstrip().startswith(("<command-", "<local-command", "<system-reminder>")):
                    out.append(t)
        return out

    def assistant_texts(self) -> list[str]:
        return [t for r in self.of_type("assistant") for t in text_blocks(r) if t.strip()]

    def tool_uses(self) -> list[dict]:
        return [b for r in self.of_type("assistant") for b in blocks_of(r, "tool_use")]

    def tool_results(self) -> list[dict]:
        return [b for r in self.of_type("user") for b in blocks_of(r, "tool_result")]

    def types(self) -> set[str]:
        out = set()
        for r in self.records:
            t = r.get("type")
            if t == "system":
                out.add(f"system/{r.get('subtype')}")
            elif t == "attachment":
                out.add(f"attachment/{(r.get('attachment') or {}).get('type')}")
            else:
                out.add(t)
        return out


_HOOK_RUN = re.compile(r"Hooks: (\S+) \[(.*)\] finished with status (-?\d+) \((\d+)ms\)")


def debug_hook_runs(path) -> list[tuple[str, str, int, int]]:
    """``(event, command, exit status, ms)`` of each hook run a ``--debug-file`` log records
    (``Hooks: Stop [cmd] finished with status 0 (30ms)``; SessionEnd runs, at exit, are not logged)."""
    text = pathlib.Path(path).read_text(errors="replace") if pathlib.Path(path).exists() else ""
    return [(m[1], m[2], int(m[3]), int(m[4])) for m in _HOOK_RUN.finditer(text)]


def tool_result_text(block: dict) -> str:
    c = block.get("content")
    if isinstance(c, str):
        return c
    return "\n".join(b.get("text", "") for b in c or [] if isinstance(b, dict) and b.get("type") == "text")


# -- the scratch installation ----------------------------------------------------------------


@dataclass
class PrintResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    events: list[dict] = field(default_factory=list)
    debug_file: pathlib.Path | None = None  # --debug-file: hook runs with their status, MCP connections

    @property
    def session_id(self) -> str | None:
        """The session the run wrote to: the result's (with ``--continue``, the SessionStart
        hook events before it carry a provisional id of their own)."""
        for e in reversed(self.events):
            if e.get("type") in ("result", "assistant") and e.get("session_id"):
                return e["session_id"]
        for e in self.events:
            if e.get("type") == "system" and e.get("subtype") == "init":
                return e.get("session_id")
        return None

    @property
    def result(self) -> dict | None:
        for e in reversed(self.events):
            if e.get("type") == "result":
                return e
        return None

    def hook_events(self) -> list[dict]:
        return [e for e in self.events if e.get("type") == "system" and str(e.get("subtype", "")).startswith("hook_")]


class Scratch:
    """One isolated Claude Code user: HOME, project folder, environment, claude-chats."""

    def __init__(self, root: pathlib.Path, binary: pathlib.Path, api_url: str, project_name: str = "proj"):
        self.root = pathlib.Path(root)
        self.binary = pathlib.Path(binary)
        self.api_url = api_url
        self.home = self.root / "home"
        self.claude_dir = self.home / ".claude"
        self.chats_home = self.root / "chats-home"
        self.bin = self.root / "bin"
        self.project = self.root / project_name
        self.probe_log = self.root / "probe.jsonl"
        self.snapshots = self.root / "snapshots"
        self.debug_dir = self.root / "debug"
        for d in (self.home, self.claude_dir, self.bin, self.project, self.debug_dir):
            d.mkdir(parents=True, exist_ok=True)
        wrapper = self.bin / "claude"
        wrapper.write_text(f"#!/bin/sh\nexec {shlex.quote(str(self.binary))} \"$@\"\n")
        wrapper.chmod(0o755)
        subprocess.run(["git", "init", "-q", "-b", "main", str(self.project)], check=False, capture_output=True)
        self.write_claude_json()

    # environment ------------------------------------------------------------------------

    def env(self, **extra) -> dict:
        env = {
            "PATH": f"{self.bin}:{pathlib.Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "USER": os.environ.get("USER", "root"),
            "LANG": "C.UTF-8",
            "TERM": "xterm-256color",
            "SHELL": "/bin/bash",
            "TMPDIR": str(self.root / "tmp"),
            "ANTHROPIC_BASE_URL": self.api_url,
            "ANTHROPIC_API_KEY": API_KEY,
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "IS_SANDBOX": "1",
            "CLAUDE_CHATS_HOME": str(self.chats_home),
            "CLAUDE_CHATS_SYNC_INTERVAL": "0",
            # these sessions are made by a script: flagged machine-made (left out of search by default)
            "CLAUDE_CHATS_MACHINE_MADE": "1",
        }
        (self.root / "tmp").mkdir(exist_ok=True)
        for k, v in extra.items():  # None removes a variable
            if v is None:
                env.pop(k, None)
            else:
                env[k] = str(v)
        return env

    def write_claude_json(self, **extra) -> None:
        """``~/.claude.json`` as after a first run: onboarding done, key approved, project trusted."""
        path = self.home / ".claude.json"
        data = json.loads(path.read_text()) if path.exists() else {}
        data.update({
            "hasCompletedOnboarding": True,
            "lastOnboardingVersion": CLAUDE_CODE_VERSION,
            "theme": "dark",
            "bypassPermissionsModeAccepted": True,
            "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
        })
        projects = data.setdefault("projects", {})
        for p in (self.project, *extra.pop("trusted", ())):
            projects.setdefault(str(p), {}).update({"hasTrustDialogAccepted": True, "allowedTools": [],
                                                    "hasCompletedProjectOnboarding": True})
        data.update(extra)
        path.write_text(json.dumps(data, indent=2))

    def settings_path(self) -> pathlib.Path:
        return self.claude_dir / "settings.json"

    def settings(self) -> dict:
        p = self.settings_path()
        return json.loads(p.read_text()) if p.exists() else {}

    def write_settings(self, data: dict) -> None:
        self.settings_path().write_text(json.dumps(data, indent=2) + "\n")

    # claude-chats -------------------------------------------------------------------------

    def chats(self, *args, check=True, timeout=120, **env) -> subprocess.CompletedProcess:
        proc = subprocess.run([str(chats_bin()), *args], capture_output=True, text=True, timeout=timeout,
                              env=self.env(**env), cwd=self.project)
        if check and proc.returncode != 0:
            raise AssertionError(f"chats {' '.join(args)} exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        return proc

    def chats_json(self, *args):
        return json.loads(self.chats(*args, "--json").stdout)

    def show(self, session_id: str, home=None) -> dict | None:
        """``chats show --json`` of a session (None when the journal has no such session).

        ``home``: another CLAUDE_CHATS_HOME, e.g. a folder holding a journal snapshot.
        """
        env = {"CLAUDE_CHATS_HOME": str(home)} if home else {}
        proc = self.chats("show", session_id, "--json", check=False, **env)
        if proc.returncode != 0:
            if "no session" in proc.stderr + proc.stdout:
                return None
            raise AssertionError(f"chats show failed: {proc.stdout}{proc.stderr}")
        return json.loads(proc.stdout)

    def show_at(self, snapshot: str, session_id: str) -> dict | None:
        """``chats show`` of the journal as a probed hook run left it (its snapshot)."""
        home = pathlib.Path(snapshot).with_suffix("")
        home.mkdir(exist_ok=True)
        if not (home / "journal.db").exists():
            shutil.copy(snapshot, home / "journal.db")
        return self.show(session_id, home=home)

    def sessions(self) -> list[dict]:
        return self.chats_json("sessions", "--limit", "1000", "--subagents", "--origin", "any")

    def search(self, query: str, *args) -> dict:
        return self.chats_json("search", query, "--local", "--origin", "any", *args)

    def install(self) -> subprocess.CompletedProcess:
        return self.chats("install")

    def probe(self, events=("SessionStart", "SubagentStart", "SubagentStop", "PostCompact", "Notification",
                            "PreToolUse", "PostToolUse", "PostToolUseFailure", "StopFailure"),
              replay=("Stop",)) -> None:
        """Log every hook run: wrap each installed hook, and add a bare probe on ``events``.

        A wrapped hook runs the installed command itself (same stdin), so the
        probe sees the transcript as the hook got it and takes a copy of the
        journal right after that run: what that hook run stored, at its own event.
        On the ``replay`` events a run that Claude Code fired before writing the
        turn's final line is also replayed with that line landing a fixed second
        later (see probe_hook.py): the same situation, whatever the machine's load.
        """
        data = self.settings()
        base = f"{shlex.quote(sys.executable)} -S {shlex.quote(str(PROBE))} {shlex.quote(str(self.probe_log))}"
        journal = self.chats_home / "journal.db"
        for event, groups in (data.get("hooks") or {}).items():
            for group in groups:
                for hook in group.get("hooks") or []:
                    if hook.get("type") == "command" and str(PROBE) not in hook["command"]:
                        wrapped = (f"{base} --journal {shlex.quote(str(journal))} --snapshots "
                                   f"{shlex.quote(str(self.snapshots))}")
                        if event in replay:
                            wrapped += f" --replay {shlex.quote(str(self.root / 'replays'))}"
                        hook["command"] = f"{wrapped} -- {hook['command']}"
        hooks = data.setdefault("hooks", {})
        for event in events:
            if event not in hooks:
                hooks[event] = [{"hooks": [{"type": "command", "command": base, "timeout": 30}]}]
        self.write_settings(data)

    def probe_runs(self, event: str | None = None) -> list[dict]:
        if not self.probe_log.exists():
            return []
        runs = read_jsonl(self.probe_log)
        return [r for r in runs if event is None or r["event"] == event]

    # running Claude Code --------------------------------------------------------------------

    def claude(self, *args, timeout=120, input=None, cwd=None, **env) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.bin / "claude"), *args], capture_output=True, text=True, timeout=timeout,
                              env=self.env(**env), cwd=cwd or self.project, input=input)

    def print_turn(self, prompt: str, *args, timeout=120, stream=True, cwd=None, **env) -> PrintResult:
        """One ``claude -p PROMPT`` run (stream-json with hook events unless ``stream=False``)."""
        debug = self.debug_dir / f"print-{uuidlib.uuid4().hex[:8]}.log"
        argv = ["-p", prompt, "--permission-mode", "bypassPermissions", "--debug-file", str(debug), *args]
        if stream:
            argv += ["--output-format", "stream-json", "--verbose", "--include-hook-events"]
        t0 = time.monotonic()
        proc = self.claude(*argv, timeout=timeout, cwd=cwd, **env)
        res = PrintResult(argv, proc.returncode, proc.stdout, proc.stderr, time.monotonic() - t0, debug_file=debug)
        if stream:
            for line in proc.stdout.splitlines():
                with contextlib.suppress(ValueError):
                    res.events.append(json.loads(line))
        return res

    def interactive(self, *args, name: str | None = None, cwd=None, **env) -> "Interactive":
        return Interactive(self, list(args), name=name, cwd=cwd, env=env)

    # what Claude Code wrote ------------------------------------------------------------------

    def projects_dir(self) -> pathlib.Path:
        return self.claude_dir / "projects"

    def transcript_path(self, session_id: str) -> pathlib.Path:
        found = list(self.projects_dir().glob(f"*/{session_id}.jsonl"))
        if not found:
            raise AssertionError(f"no transcript for session {session_id} under {self.projects_dir()}")
        return found[0]

    def transcript(self, session_id: str) -> Transcript:
        path = self.transcript_path(session_id)
        return Transcript(path, read_jsonl(path))

    def subagent_transcripts(self, session_id: str) -> list[Transcript]:
        folder = self.transcript_path(session_id).with_suffix("") / "subagents"
        return [Transcript(p, read_jsonl(p)) for p in sorted(folder.glob("agent-*.jsonl"))]

    def processes(self) -> list[int]:
        """Processes running with this scratch HOME: Claude Code and whatever it left running.

        ``/fork`` starts a daemon (``claude daemon run``, ``bg-pty-host``, ``bg-spare``,
        the forked session and its MCP servers) that outlives the interactive
        session and is reparented to init.
        """
        mine = f"HOME={self.home}".encode()
        found = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            try:
                with open(f"/proc/{pid}/environ", "rb") as fh:
                    if mine in fh.read().split(b"\0"):
                        found.append(int(pid))
            except OSError:
                continue
        return found

    def cleanup(self, grace=2.0) -> None:
        """End every process of this scratch HOME (by pid): SIGTERM, then SIGKILL."""
        import signal

        for sig in (signal.SIGTERM, signal.SIGKILL):
            pids = self.processes()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and self.processes():
                time.sleep(0.1)

    def mcp_faults(self) -> list[str]:
        """What says ``chats mcp`` was late in this scratch's runs: a version negotiation probe that timed
        out (the debug logs) or "still connecting" in a tool result (the transcripts). Each as one line.

        The probe's 3 s run from Claude Code's spawn of the process to its own event loop reading the
        answer; ``chats mcp`` answers in ~0.2 s of its own. On a machine loaded beyond its cores (load
        average at or over the CPU count) the processes wait for a core and the timer says nothing of
        the server: a probe timeout there is left to the run's summary figure ("missed the version
        negotiation probe"), not failed. "still connecting" fails at any load."""
        faults = []
        loaded = hasattr(os, "getloadavg") and os.getloadavg()[0] >= (os.cpu_count() or 1)
        for log in sorted(self.debug_dir.glob("*.log")):
            for line in log.read_text(errors="replace").splitlines():
                if f'MCP server "{MCP_SERVER_NAME}"' in line and "probe timed out" in line and not loaded:
                    faults.append(f"{log.name}: {line.strip()[:300]}")
        for path in sorted(self.projects_dir().rglob("*.jsonl")) if self.projects_dir().exists() else ():
            if "still connecting" in path.read_text(errors="replace"):
                faults.append(f"{path.name}: a tool result says MCP servers are still connecting")
        return faults

    def hook_log(self) -> str:
        p = self.chats_home / "logs" / "hook.log"
        return p.read_text(errors="replace") if p.exists() else ""


# -- interactive mode (tmux) ------------------------------------------------------------------


def eventually(check, what, timeout=LOADED, interval=0.2):
    """``check()``'s first truthy value, asked every ``interval`` seconds; AssertionError naming ``what``
    after ``timeout`` (what another process writes shows up when the machine lets it, not at once)."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def _json_or_empty(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


class Interactive:
    """Claude Code's interactive UI in a detached tmux session."""

    def __init__(self, scratch: Scratch, args: list[str], name=None, cwd=None, env=None):
        if not shutil.which("tmux"):
            unavailable("tmux is not on PATH: interactive-mode tests need it (apt-get install tmux)")
        self.scratch = scratch
        self.name = name or f"cc-{uuidlib.uuid4().hex[:8]}"
        self.debug = scratch.debug_dir / f"{self.name}.log"
        self.socket = str(scratch.root / "tmux.sock")
        env = scratch.env(**(env or {}))
        argv = [str(scratch.bin / "claude"), "--permission-mode", "bypassPermissions",
                "--debug-file", str(self.debug), *args]
        envs = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        cmd = f"cd {shlex.quote(str(cwd or scratch.project))} && exec env -i {envs} {shlex.join(argv)}"
        self._tmux("new-session", "-d", "-s", self.name, "-x", "160", "-y", "50", cmd)
        self._tmux("set-option", "-t", self.name, "remain-on-exit", "on")

    def _tmux(self, *args, check=True) -> subprocess.CompletedProcess:
        env = {**os.environ, "TERM": os.environ.get("TERM") or "xterm-256color"}
        return subprocess.run(["tmux", "-S", self.socket, *args], capture_output=True, text=True, check=check,
                              env=env)

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", self.name, check=False).stdout

    def alive(self) -> bool:
        out = self._tmux("display-message", "-p", "-t", self.name, "#{pane_dead}", check=False)
        return out.returncode == 0 and out.stdout.strip() == "0"

    def wait_for(self, predicate, timeout=LOADED, what="screen condition", interval=0.2):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            got = predicate(screen) if callable(predicate) else (predicate in screen)
            if got:
                return got
            time.sleep(interval)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}; screen:\n{self.screen()}")

    def type(self, text: str, enter=True, timeout=15):
        """Type ``text`` into the input box; once it shows there, press Enter.

        Keys typed while the UI is still starting can be lost: the text is typed
        again (after clearing the line) until it shows.
        """
        probe = text[:30].strip()
        deadline = time.monotonic() + timeout
        while True:
            self._tmux("send-keys", "-t", self.name, "-l", text)
            shown_by = time.monotonic() + 2
            while time.monotonic() < shown_by and probe not in self._input_line():
                time.sleep(0.1)
            if probe in self._input_line():
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never showed in the input box; screen:\n{self.screen()}")
            self._tmux("send-keys", "-t", self.name, "C-u")
        if enter:
            time.sleep(0.2)
            self._tmux("send-keys", "-t", self.name, "Enter")

    def _input_line(self) -> str:
        """The screen from the last prompt marker on (the input box), joined."""
        screen = self.screen()
        i = screen.rfind("❯")
        return screen[i:].replace("\n", "") if i >= 0 else ""

    def turn(self, prompt: str, timeout=LOADED, settle=0.0):
        """Type a prompt and wait for its turn's Stop hook run (needs ``Scratch.probe()``).

        Returns the probe's record of that Stop run.
        """
        before = len(self.scratch.probe_runs("Stop"))
        self.type(prompt)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            runs = self.scratch.probe_runs("Stop")
            if len(runs) > before and runs[-1].get("t_end"):
                time.sleep(settle)
                return runs[before]
            time.sleep(0.1)
        raise AssertionError(f"no Stop hook run within {timeout}s of {prompt!r}; screen:\n{self.screen()}")

    def wait_idle(self, timeout=LOADED):
        """Wait until the UI shows the input box (after start-up or a command) and, when ``chats mcp`` is
        registered, Claude Code has connected it."""
        got = self.wait_for(lambda s: "bypass permissions" in s and "❯" in s, timeout=timeout, what="the idle prompt")
        self.wait_mcp(timeout)
        time.sleep(0.5)
        return got

    def wait_mcp(self, timeout=LOADED):
        """Wait until Claude Code's debug log says it connected ``chats mcp`` (when it is registered).

        On a loaded machine Claude Code's own start-up (its plugins, the marketplace, the file index, on
        one event loop) takes it seconds to get round to the connection, longer than a test takes to type
        its first prompt: that turn's context then says the server is "still connecting", Claude Code's
        delay and not the server's (which answers in ~0.2 s; a late answer shows as a probe timeout in the
        same log, and the suite still fails on it). A person types later than that."""
        registered = MCP_SERVER_NAME in (_json_or_empty(self.scratch.home / ".claude.json").get("mcpServers") or {})
        connected = f'MCP server "{MCP_SERVER_NAME}": Successfully connected'
        deadline = time.monotonic() + timeout
        while registered and time.monotonic() < deadline:
            if self.debug.exists() and connected in self.debug.read_text(errors="replace"):
                return
            time.sleep(0.2)

    def keys(self, *keys):
        self._tmux("send-keys", "-t", self.name, *keys)

    def close(self, timeout=20):
        """Leave as a user does (/exit), then kill the tmux session."""
        if self.alive():
            with contextlib.suppress(Exception):
                self.type("/exit")
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline and self.alive():
                    time.sleep(0.2)
        self._tmux("kill-session", "-t", self.name, check=False)
        self.scratch.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
