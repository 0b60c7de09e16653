"""The synthetic year of Claude Code history that ``scripts/bench_scale.py`` measures (issue 22).

Claude Code 2.1.332-shaped JSONL (``tests/claude_code/fixtures``, ``/work/wt/shared/corpus/FORMAT.md``):
per turn a user prompt (string content), an assistant reply streamed as one line per block (thinking,
text, tool_use, sharing ``message.id`` and ``requestId``), one user ``tool_result`` line per tool call
(with the duplicate ``toolUseResult``), bookkeeping lines that are not messages (``system``
turn_duration / stop_hook_summary, ``last-prompt``, ``ai-title``), now and then a compaction
(``system`` compact_boundary then the ``isCompactSummary`` user line) and a ``summary`` title line.
40 projects, a year of timestamps, sessions of lognormal length plus one of 20,000 messages.

Words: a Zipf law (s ~1.07) over a ranked vocabulary: common English and programming words first,
then a long tail of made-up words and code identifiers (snake_case, CamelCase, paths, error names), and
a few real technical words placed deep in the tail so that queries written beforehand have rare words
(``RARE``). Each project has a few identifiers of its own mixed into its sessions.

Only the standard library and numpy; no import from claude_chats (the benchmark drives the product
through its CLI).
"""

import json
import os
import random
import uuid
from datetime import datetime, timedelta, timezone

import numpy as np

VERSION = "2.1.332"
PROJECTS = [f"/home/dev/{name}" for name in (
    "api-gateway", "billing", "webapp", "mobile-app", "infra", "data-pipeline", "ml-models", "docs-site",
    "auth-service", "search", "notifications", "analytics", "cli-tools", "payments", "inventory",
    "scheduler", "chat-backend", "frontend-kit", "etl-jobs", "monitoring", "k8s-charts", "terraform",
    "game-engine", "compiler", "parser-lib", "orm", "cache-layer", "queue-worker", "media-service",
    "recommendations", "crm", "admin-panel", "sdk-python", "sdk-js", "firmware", "robotics",
    "blog", "dotfiles", "research-notes", "playground")]
START = datetime(2025, 12, 1, tzinfo=timezone.utc)
YEAR = timedelta(days=365)
LONG_SESSION = 20_000

COMMON = """the to a of and is in it that this for you on with be not i we can as are if have but so do at
or from by an will file function test error code should would use value one what which when there
need now like just then all data return run new line add change fix check make see let here also
build type get set call first two because only it's don't into some time work case output read
config update path name version list more way each string user after before problem issue test
module class method import default null true false number server request response database query
key field object array parameter option command script directory message log result same other
error: failed expected found missing instead still without already every where how why again
could might must does did done using used following added removed changed current previous next
install package dependency branch commit merge push pull review local remote environment variable
""".split()
PROGRAMMING = """def self return import from class async await yield lambda None True False try except
raise finally with const let var function export interface struct impl fn pub mut match enum trait
SELECT INSERT UPDATE WHERE JOIN CREATE INDEX TABLE npm pip cargo git docker make pytest jest assert
http https json yaml toml sql html css api url uri id ids uuid timestamp int str dict list bool float
""".split()
RARE = """deadlock segfault flaky kubernetes ingress tokenizer backoff idempotent websocket mutex
memoization serializer hydration sharding pgvector tombstone checksum debounce throttling oauth
refactoring monorepo linter coverage migration rollback healthcheck latency""".split()
CODE_PARTS = """parse load save read write config cache index token user session request handler client
server sync async worker queue job task event stream buffer retry timeout error state store db conn
pool batch chunk page item node tree graph path file dir key value model vector search query rank
score filter sort merge split build render view route auth login hash encode decode""".split()


def _identifiers(rng, n):
    out = set()
    while len(out) < n:
        a, b, c = rng.choice(CODE_PARTS), rng.choice(CODE_PARTS), rng.choice(CODE_PARTS)
        form = rng.random()
        if form < 0.35:
            out.add(f"{a}_{b}")
        elif form < 0.55:
            out.add(f"{a.capitalize()}{b.capitalize()}{c.capitalize()}")
        elif form < 0.7:
            out.add(f"{a}{b.capitalize()}")
        elif form < 0.85:
            out.add(f"src/{a}/{b}_{c}.py")
        else:
            out.add(f"{a.upper()}_{b.upper()}")
    return sorted(out)


class Words:
    """A ranked vocabulary with Zipf weights and a pre-drawn stream to slice texts from."""

    def __init__(self, seed=22, tail=60_000, stream=6_000_000):
        rng = random.Random(seed)
        letters = "abcdefghijklmnopqrstuvwxyz"
        made_up = {"".join(rng.choice(letters) for _ in range(rng.randint(4, 11))) for _ in range(tail)}
        tail_words = sorted(made_up) + _identifiers(rng, tail // 4)
        rng.shuffle(tail_words)
        for k, word in enumerate(RARE):          # deep in the tail: rank ~2,000-40,000
            tail_words.insert(2_000 + k * 1_500, word)
        head = list(dict.fromkeys(COMMON + PROGRAMMING))
        rng.shuffle(head)
        self.vocab = np.array(head + tail_words, dtype=object)
        ranks = np.arange(1, len(self.vocab) + 1, dtype=np.float64)
        cdf = np.cumsum(1.0 / (ranks + 2.7) ** 1.07)
        draw = np.random.default_rng(seed).random(stream) * cdf[-1]
        self.stream = self.vocab[np.searchsorted(cdf, draw)].tolist()
        self.rng = rng

    def text(self, chars, extra=()):
        """About ``chars`` characters of Zipf-distributed words (and some of ``extra``)."""
        n = max(2, chars // 6)
        start = self.rng.randrange(len(self.stream) - n)
        words = self.stream[start:start + n]
        if extra:
            for _ in range(max(1, n // 25)):
                words[self.rng.randrange(n)] = self.rng.choice(extra)
        return " ".join(words)


TEXT_SCALE = 1.42   # tuned so that a line averages ~1.77 KB, as in the corpus


def _size(rng, median, sigma=0.8, cap=16_000):
    return int(min(cap, max(20, rng.lognormvariate(0, sigma) * median * TEXT_SCALE)))


class Session:
    """The lines of one session: ``messages`` message lines (user and assistant), plus bookkeeping."""

    def __init__(self, words, rng, session_id, cwd, start, messages, slug):
        self.w, self.rng, self.id, self.cwd, self.slug = words, rng, session_id, cwd, slug
        self.t, self.target, self.count, self.parent = start, messages, 0, None
        self.topic = _identifiers(random.Random(cwd), 12)

    def _uid(self):
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _env(self, kind, **extra):
        self.t += timedelta(seconds=self.rng.randint(1, 40))
        uid = self._uid()
        obj = {"parentUuid": self.parent, "isSidechain": False, **extra, "type": kind, "uuid": uid,
               "timestamp": self.t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.t.microsecond // 1000:03d}Z",
               "userType": "external", "entrypoint": "cli", "cwd": self.cwd, "sessionId": self.id,
               "version": VERSION, "gitBranch": "main", "slug": self.slug}
        self.parent = uid
        return obj

    def _user(self, content, **extra):
        self.count += 1
        return self._env("user", promptId=self._uid(), message={"role": "user", "content": content}, **extra)

    def _assistant(self, block, mid, rid):
        self.count += 1
        usage = {"input_tokens": self.rng.randint(3, 900), "cache_creation_input_tokens": self.rng.randint(0, 9000),
                 "cache_read_input_tokens": self.rng.randint(0, 90000), "output_tokens": self.rng.randint(1, 3000),
                 "service_tier": "standard"}
        return self._env("assistant", message={"id": mid, "type": "message", "role": "assistant",
                                               "model": "claude-opus-5-5", "content": [block], "stop_reason": None,
                                               "stop_sequence": None, "usage": usage}, requestId=rid)

    def _system(self, subtype, **extra):
        return self._env("system", subtype=subtype, isMeta=False, level="info", **extra)

    def _tool(self, mid, rid):
        r, w = self.rng, self.w
        tid = f"toolu_{r.getrandbits(96):024x}"
        name = r.choices(("Bash", "Read", "Edit", "Grep", "Write", "TodoWrite"), (35, 25, 20, 10, 5, 5))[0]
        path = f"{self.cwd}/{r.choice(self.topic) if r.random() < 0.5 else 'src/main.py'}"
        if name == "Bash":
            inp = {"command": f"{r.choice(('pytest -x', 'git diff', 'npm test', 'make build', 'grep -rn'))} "
                              f"{w.text(40, self.topic)}", "description": w.text(40)}
        elif name in ("Read", "Write"):
            inp = {"file_path": path} if name == "Read" else {"file_path": path, "content": w.text(_size(r, 500))}
        elif name == "Edit":
            inp = {"file_path": path, "old_string": w.text(_size(r, 150), self.topic),
                   "new_string": w.text(_size(r, 180), self.topic)}
        elif name == "Grep":
            inp = {"pattern": r.choice(self.topic), "path": self.cwd}
        else:
            inp = {"todos": [{"content": w.text(50), "status": "pending"} for _ in range(r.randint(1, 4))]}
        yield self._assistant({"type": "tool_use", "id": tid, "name": name, "input": inp}, mid, rid)
        out_lines = [f"{r.choice(self.topic)}:{r.randint(1, 900)}: {self.w.text(_size(r, 70, 0.5), self.topic)}"
                     for _ in range(max(1, _size(r, 420) // 80))]
        output = "\n".join(out_lines)
        error = r.random() < 0.06
        if error:
            output = f"Error: {r.choice(('ConnectionRefusedError', 'TimeoutError', 'KeyError', 'AssertionError'))}" \
                     f" {output}"
        result = {"stdout": output, "stderr": "", "interrupted": False, "isImage": False} if name == "Bash" else \
            {"type": "text", "file": {"filePath": path, "numLines": len(out_lines)}} if name == "Read" else \
            {"filePath": path}
        yield self._user([{"tool_use_id": tid, "type": "tool_result", "content": output, "is_error": error}],
                         toolUseResult=result, sourceToolAssistantUUID=self.parent)

    def lines(self):
        r, w = self.rng, self.w
        if r.random() < 0.15:
            yield {"type": "summary", "summary": w.text(60), "leafUuid": self._uid()}
        while self.count < self.target:
            if self.count and r.random() < 0.004:       # a compaction now and then
                self.parent = None
                yield self._system("compact_boundary", content="Conversation compacted",
                                   logicalParentUuid=self._uid(),
                                   compactMetadata={"trigger": "auto", "preTokens": r.randint(90000, 160000)})
                yield self._user("This session is being continued from a previous conversation that ran out of "
                                 "context. The conversation is summarized below:\n" + w.text(_size(r, 2500), self.topic),
                                 isCompactSummary=True, isVisibleInTranscriptOnly=True)
            yield self._user(w.text(_size(r, 260, 1.0), self.topic))
            mid, rid = f"msg_{r.getrandbits(96):024x}", f"req_{r.getrandbits(96):024x}"
            if r.random() < 0.7:
                yield self._assistant({"type": "thinking", "thinking": w.text(_size(r, 700), self.topic),
                                       "signature": f"{r.getrandbits(256):064x}"}, mid, rid)
            for _ in range(r.choices((0, 1, 2, 3, 5), (20, 35, 20, 15, 10))[0]):
                if self.count >= self.target:
                    break
                yield self._assistant({"type": "text", "text": w.text(_size(r, 250), self.topic)}, mid, rid)
                yield from self._tool(mid, rid)
            yield self._assistant({"type": "text", "text": w.text(_size(r, 900), self.topic)}, mid, rid)
            yield self._system("turn_duration", durationMs=r.randint(2000, 300000), messageCount=self.count)
        yield {"type": "last-prompt", "lastPrompt": w.text(80), "leafUuid": self.parent, "sessionId": self.id}


def session_plan(n, seed=22):
    """[(messages, project, start)]: one long session (``LONG_SESSION``, less for small corpora), the rest
    of lognormal length, over 40 projects (some busier than others) and a year."""
    rng = random.Random(seed)
    long = min(LONG_SESSION, n // 5)
    plan, total = [long], long
    while total < n:
        k = int(min(5_000, max(6, rng.lognormvariate(5.0, 1.1))))   # median ~150 messages
        k = min(k, n - total)
        plan.append(k)
        total += k
    weights = [1 / (i + 1) ** 0.7 for i in range(len(PROJECTS))]
    starts = sorted(START + YEAR * rng.random() for _ in plan)
    rng.shuffle(plan)
    return [(k, rng.choices(PROJECTS, weights)[0], s) for k, s in zip(plan, starts)]


def write_corpus(projects_dir, n, seed=22, sample=0):
    """Transcripts of ``n`` messages under ``projects_dir`` (Claude Code's layout). Returns a dict:
    ``messages``, ``lines``, ``bytes``, ``kinds`` (line counts by type), ``long_session`` (its id),
    ``sample`` (up to ``sample`` message texts spread over the corpus, for the real-model anchors)."""
    words = Words(seed)
    rng = random.Random(seed + 1)
    stats = {"messages": 0, "lines": 0, "bytes": 0, "kinds": {}, "sample": [], "long_session": None}
    long = min(LONG_SESSION, n // 5)
    every = max(1, n // max(1, sample)) if sample else 0
    for k, cwd, start in session_plan(n, seed):
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        if k == long and stats["long_session"] is None:
            stats["long_session"] = sid
        folder = os.path.join(projects_dir, cwd.replace("/", "-"))
        os.makedirs(folder, exist_ok=True)
        session = Session(words, rng, sid, cwd, start, k, f"{rng.choice(CODE_PARTS)}-{rng.choice(CODE_PARTS)}")
        with open(os.path.join(folder, f"{sid}.jsonl"), "w") as fh:
            for obj in session.lines():
                line = json.dumps(obj, separators=(",", ":")) + "\n"
                fh.write(line)
                stats["lines"] += 1
                stats["bytes"] += len(line)
                stats["kinds"][obj["type"]] = stats["kinds"].get(obj["type"], 0) + 1
                if every and obj["type"] in ("user", "assistant") and rng.random() < 1 / every:
                    stats["sample"].append(_text_of(obj)[:1000])
        stats["messages"] += session.count
    return stats


def _text_of(obj):
    content = obj["message"]["content"]
    if isinstance(content, str):
        return content
    block = content[0]
    return block.get("text") or block.get("thinking") or block.get("content") or json.dumps(block.get("input"))
