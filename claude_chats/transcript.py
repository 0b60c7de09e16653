"""Claude Code transcript lines -> records. Pure: no database, no network, no files.

Claude Code writes one JSON object per line (see ../shared/corpus/FORMAT.md for
what real files hold). ``parse_lines`` turns the complete lines of a byte chunk
into ``Record`` objects (one per stored message part), ``Title`` events (session
names) and counted skips, and says how many bytes it consumed: a line without
its trailing newline is still being written and is left for the next call.

Identity: a record's ``uuid`` is the line's ``uuid``; a line with several content
blocks yields ``uuid``, ``uuid#1``, ``uuid#2``... so re-reading a file is
idempotent. Assistant replies are streamed as several lines sharing
``message.id`` (one block each); each block is its own record, and
``message_id`` keeps them grouped.

Imports stay minimal: the hook runs this on every turn. JSON is decoded with
the C scanner (``jsonl``) and regular expressions are compiled only when a
line needs one, so plain lines cost neither ``json`` nor ``re``.
"""

from . import jsonl, rawlines

# Record kinds. DEFAULT_KINDS are what search covers unless asked otherwise.
TEXT = "text"                      # typed by the person, or the assistant's prose
TOOL_USE = "tool_use"              # "[Bash] git status"
TOOL_RESULT = "tool_result"        # a tool's output (text only)
THINKING = "thinking"              # assistant reasoning: stored, not searched by default
COMPACT_SUMMARY = "compact_summary"  # the summary Claude Code writes after compaction
COMPACT_BOUNDARY = "compact_boundary"  # marker: "the conversation was compacted here"
COMMAND = "command"                # slash-command wrappers, local command output, ! bash input
META = "meta"                      # isMeta lines, system reminders, IDE notes, task notifications
INTERRUPT = "interrupt"            # "[Request interrupted by user]"
RECAP = "recap"                    # Claude Code's recap of the session (system/away_summary)
LINK = "link"                      # a pull request the session opened (pr-link): "pull request #42 ..."

KINDS = (TEXT, TOOL_USE, TOOL_RESULT, THINKING, COMPACT_SUMMARY, COMPACT_BOUNDARY, COMMAND, META, INTERRUPT,
         RECAP, LINK)
DEFAULT_KINDS = (TEXT, TOOL_USE, TOOL_RESULT, COMPACT_SUMMARY, RECAP, LINK)
# What a conversation is read as (pages, a hit's neighbouring messages): everything but thinking.
CONVERSATION_KINDS = tuple(k for k in KINDS if k != THINKING)
MACHINE_ENTRYPOINTS = "sdk-"       # `entrypoint` of sessions scripts and SDK runs start: sdk-cli (claude -p), sdk-ts, sdk-py


def machine_made(entrypoint):
    """Whether a session whose first ``entrypoint`` is this was started by a script or an SDK run
    (interactive sessions say ``cli``; transcripts older than the field have none: a person's)."""
    return isinstance(entrypoint, str) and entrypoint.startswith(MACHINE_ENTRYPOINTS)

MAX_TOOL_RESULT_CHARS = 100_000    # tool output beyond this is cut, with a marker saying so
MAX_TOOL_INPUT_CHARS = 2_000


class _Patterns:
    """Regular expressions, compiled on first use (``re`` costs the hook milliseconds)."""

    def __getattr__(self, name):
        import re

        # CSI (colours, cursor moves), OSC (titles, hyperlinks; ended by BEL or ESC \), other ESC pairs.
        self.ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[()][0-9A-Za-z]|\x1b[@-_]?")
        self.DATA_URI = re.compile(
            r"data:[\w.+-]+/[\w.+-]+(?:;[\w.+-]+=[\w.+%-]+)*;base64,[A-Za-z0-9+/]{16,}(?:%3D|=){0,2}")
        self.BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{300,}={0,2}")
        # base64 wrapped at 64 or 76 columns (`base64 file`, PEM, MIME): 4+ full lines, then the rest.
        self.BASE64_WRAPPED = re.compile(r"^(?:[A-Za-z0-9+/]{60,}\r?\n){3,}[A-Za-z0-9+/]{4,}={0,2}\r?$", re.M)
        # Notes Claude Code adds around what the person typed; only complete elements count, so a
        # prompt that merely mentions "<system-reminder>" is left alone.
        self.NOTE = re.compile(r"<(system-reminder|ide_opened_file|ide_selection|ide_diagnostics|task-notification|"
                               r"user-prompt-submit-hook|session-start-hook)>.*?</\1>", re.S)
        return object.__getattribute__(self, name)


_RX = _Patterns()
_NOTE_TAGS = ("<system-reminder>", "<ide_opened_file>", "<ide_selection>", "<ide_diagnostics>",
              "<task-notification>", "<user-prompt-submit-hook>", "<session-start-hook>")
_COMMAND_TAGS = ("<command-name>", "<command-message>", "<command-args>", "<local-command-stdout>",
                 "<local-command-stderr>", "<local-command-caveat>", "<bash-input>", "<bash-stdout>",
                 "<bash-stderr>")
_META_TAGS = ("<system-reminder>", "<ide_opened_file>", "<ide_selection>", "<task-notification>",
              "<user-prompt-submit-hook>", "<session-start-hook>", "Caveat: The messages below were generated")
_INTERRUPT = "[Request interrupted by user"
# Record types kept out of the journal, with the reason they are counted under (docs/claude-code-2.1.332.md
# lists every type a transcript holds and what becomes of it).
_SKIP_TYPES = {
    "progress": "progress", "attachment": "attachment",
    "api-request": "api request log", "api-request-shape": "api request log", "api-request-blob": "api request log",
    **{t: "bookkeeping" for t in ("file-history-snapshot", "queue-operation", "permission-mode", "last-prompt",
                                  "mode", "atis-latch", "tools-used", "cost-state")},
}


class Record:
    """One stored message part (a text, a tool call, a tool result, ...)."""

    __slots__ = ("uuid", "session_id", "role", "kind", "text", "timestamp", "cwd", "git_branch",
                 "is_sidechain", "agent_id", "parent_session_id", "message_id", "slug", "entrypoint")

    def __init__(self, uuid, session_id, role, kind, text, timestamp=None, cwd=None, git_branch=None,
                 is_sidechain=False, agent_id=None, parent_session_id=None, message_id=None, slug=None,
                 entrypoint=None):
        self.uuid, self.session_id, self.role, self.kind, self.text = uuid, session_id, role, kind, text
        self.timestamp, self.cwd, self.git_branch = timestamp, cwd, git_branch
        self.is_sidechain, self.agent_id, self.parent_session_id = is_sidechain, agent_id, parent_session_id
        self.message_id, self.slug, self.entrypoint = message_id, slug, entrypoint

    def as_dict(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def __repr__(self):
        return f"Record({self.session_id!r}, {self.role}/{self.kind}, {self.text[:40]!r})"


class Title:
    """A session name seen in the transcript.

    ``source`` is ``custom`` (``/rename``; last one wins), ``agent_name``,
    ``ai`` (the title Claude Code generates, ``ai-title``; last one wins), or
    ``summary`` (only a title when ``leaf_uuid`` is a message of the same file,
    which the store checks).
    """

    __slots__ = ("source", "session_id", "value", "leaf_uuid")

    def __init__(self, source, session_id, value, leaf_uuid=None):
        self.source, self.session_id, self.value, self.leaf_uuid = source, session_id, value, leaf_uuid

    def __repr__(self):
        return f"Title({self.source}, {self.session_id!r}, {self.value!r})"


class FileContext:
    """What the parser knows about the file the lines come from.

    ``agent_id`` is set for subagent transcripts (from the file name
    ``agent-<id>.jsonl``); their records become their own conversation,
    ``<parent session>:agent-<id>``, linked to the parent (the lines' ``sessionId``;
    for ``<session>/subagents/agent-<id>.jsonl`` the folder names it too, which is
    the fallback for lines without one). ``warmup`` is decided by the file's
    first user line and must be carried across incremental calls.

    ``keep_raw``: collect the lines ``chats restore`` needs (``ParseResult.raw``, see
    ``rawlines``); ``last_uuid`` (the last kept line's uuid, which keys the lines without one)
    is carried across calls too.

    ``capture`` (carried across calls): None records the lines; ``"project"`` keeps the whole
    file out, ``"off"`` the rest of it, ``"skip"`` the lines up to the next prompt (``capture``);
    in a subagent's file, ``"skip"``: the lines of a run (from the prompt its parent gave it) that
    started in one of ``kept_turns``, the parent's turns kept out (``[start, end]`` timestamps,
    ``end`` None while it lasts). ``exclude``: a ``capture.ProjectFilter`` of the excluded
    projects, or None.
    """

    __slots__ = ("fallback_session_id", "agent_id", "warmup", "keep_raw", "last_uuid", "capture", "exclude",
                 "kept_turns")

    def __init__(self, fallback_session_id=None, agent_id=None, warmup=None, keep_raw=True, last_uuid=None,
                 capture=None, exclude=None, kept_turns=None):
        self.fallback_session_id, self.agent_id, self.warmup = fallback_session_id, agent_id, warmup
        self.keep_raw, self.last_uuid, self.capture, self.exclude = keep_raw, last_uuid, capture, exclude
        self.kept_turns = kept_turns

    @classmethod
    def for_path(cls, path):
        folders = path.replace("\\", "/").split("/")
        name = folders.pop()
        stem = name[:-6] if name.endswith(".jsonl") else name
        if stem.startswith("agent-"):
            parent = folders[-2] if len(folders) >= 2 and folders[-1] == "subagents" and folders[-2] else None
            return cls(fallback_session_id=parent, agent_id=stem[6:])
        return cls(fallback_session_id=stem)


class ParseResult:
    """``raw``: the lines kept for restore, ``(session_id, key, parent, line bytes or None for a
    link, timestamp)`` in file order (``rawlines``). ``turns``: where keeping out began (``("open",
    timestamp)``, at each marker) and where a ``#chats-skip`` ended (``("close", timestamp)``), in
    order: what the session's subagents are kept out by (``FileContext.kept_turns``)."""

    __slots__ = ("records", "titles", "skipped", "consumed", "lines", "raw", "turns")

    def __init__(self):
        self.records, self.titles, self.skipped, self.raw, self.turns = [], [], {}, [], []
        self.consumed = 0
        self.lines = 0

    def skip(self, reason):
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def subagent_session_id(parent_session_id, agent_id):
    return f"{parent_session_id}:agent-{agent_id}"


# -- the ids Claude Code writes: file names for `chats restore` ---------------------------------

ID_LIMIT = 128   # a session id is a UUID (36 characters), an agent id 7 to 17 hex digits or
#                  `acompact-<hex>`, `aprompt_suggestion-<hex>`, `aside_question-<hex>` (2.1.x)
_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
SUBAGENT_MARK = ":agent-"


def id_problem(value):
    """Why ``value`` cannot be a session id or an agent id, or None when it can.

    ``chats restore`` makes file names of them (``<session>.jsonl``, ``agent-<agent>.jsonl``) and the
    resume line an argument, so an id is one word of ASCII letters, digits, ``-`` and ``_``, starting
    with a letter or a digit (not an option to ``claude --resume``), at most ``ID_LIMIT`` long: no
    ``/``, ``\\``, ``.``, NUL or control character, nothing absolute. Every id of the real transcripts
    has that shape (tests/test_restore_hostile.py reads them all)."""
    if not isinstance(value, str) or not value:
        return "empty"
    if len(value) > ID_LIMIT:
        return f"longer than {ID_LIMIT} characters"
    if not _ID_CHARS.issuperset(value):
        return "not only letters, digits, - and _"
    if not value[0].isalnum():
        return "not starting with a letter or a digit"
    return None


def conversation_problem(conversation_id):
    """``id_problem`` of a conversation id: a session id, or a subagent's ``<session>:agent-<agent>``."""
    if not isinstance(conversation_id, str):
        return "session id: empty"
    session, mark, agent = conversation_id.partition(SUBAGENT_MARK)
    problem = id_problem(session)
    if problem:
        return f"session id: {problem}"
    problem = id_problem(agent) if mark else None
    return f"agent id: {problem}" if problem else None


def _refused_ids(obj, ctx):
    """The skip reason of a line whose session or agent id is not one Claude Code writes, or None."""
    session, agent, parent = _envelope(obj, ctx)
    problem = id_problem(parent if agent else session)
    if problem:
        return f"refused session id: {problem}"
    problem = id_problem(agent) if agent else None
    return f"refused agent id: {problem}" if problem else None


def clean_text(text):
    """Drop what must not reach the index: NULs, ANSI escapes, base64 blobs."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    if "\x1b" in text:
        text = _RX.ANSI.sub("", text)
    if "base64," in text or _has_long_word(text):
        text = _RX.DATA_URI.sub("[base64 data omitted]", text)
        text = _RX.BASE64_RUN.sub(_base64_placeholder, text)
    if _has_wrapped_lines(text):
        text = _RX.BASE64_WRAPPED.sub(_base64_placeholder, text)
    return text.strip()


def _has_long_word(text, size=300):
    """Whether ``text`` holds a run of ``size`` characters without white space (a base64 suspect)."""
    if len(text) < size:
        return False
    return any(len(word) >= size for word in text.split())


def _has_wrapped_lines(text, count=4, width=60):
    """Whether ``text`` holds ``count`` lines in a row of ``width``+ characters without a space."""
    if len(text) < count * width or "\n" not in text:
        return False
    run = 0
    for line in text.split("\n"):
        run = run + 1 if len(line) >= width and " " not in line else 0
        if run >= count:
            return True
    return False


_HEX = frozenset("0123456789abcdefABCDEF")


def _base64_placeholder(match):
    run = "".join(match.group(0).split())
    # Long runs of one character class (hex, digits, letters only) are not base64 payloads.
    if run.isalpha() or run.isdigit() or set(run) <= _HEX:
        return match.group(0)
    return f"[base64 data omitted: {len(run)} chars]"


def parse_lines(data, ctx, final=False):
    """Parse the complete lines of ``data`` (bytes).

    Returns a ``ParseResult``; ``consumed`` is the byte length up to and
    including the last newline, or all of ``data`` when ``final`` (used only for
    text that will never grow, such as tests' literal input).
    """
    result = ParseResult()
    end = len(data) if final else data.rfind(b"\n") + 1
    result.consumed = end
    seen_blocks = set()
    chunk = data[:end].split(b"\n")
    if ctx.exclude and ctx.capture != "project" and _names_excluded_project(chunk, ctx.exclude):
        ctx.capture = "project"
    for raw in chunk:
        if not raw.strip():
            continue
        result.lines += 1
        if ctx.capture == "project" or ctx.capture == "off":   # not even read
            result.skip(_KEPT_OUT[ctx.capture])
            continue
        obj = _loads(raw)
        whole = obj is not _INVALID
        if not whole:
            result.skip("invalid json")
            obj = _torn_tail(raw)
            if obj is _INVALID:
                continue
        if not isinstance(obj, dict):
            result.skip("not an object")
            continue
        refused = _refused_ids(obj, ctx)
        if refused:
            result.skip(refused)
            continue
        records, titles = len(result.records), len(result.titles)
        try:
            _parse_object(obj, ctx, result, seen_blocks)
        except (TypeError, AttributeError, KeyError, IndexError, ValueError, RecursionError):
            result.skip("malformed record")
            continue
        if (ctx.capture is not None or len(result.records) > records or obj.get("type") == "attachment") \
                and _kept_out(ctx, obj, result, records):
            del result.records[records:], result.titles[titles:]
            result.skip(_KEPT_OUT[ctx.capture])
            uuid = rawlines.uuid_of(obj)
            if ctx.keep_raw and uuid and ctx.capture == "skip":   # the chain goes on after the turn
                result.raw.append((_envelope(obj, ctx)[0], uuid, rawlines.parent_of(obj), None, None))
            continue
        if ctx.keep_raw and whole and not (ctx.agent_id and ctx.warmup):
            _keep_raw(obj, raw, ctx, result)
    return result


_KEPT_OUT = {"project": "kept out: excluded project", "off": "kept out: #chats-off",
             "skip": "kept out: #chats-skip"}


def _names_excluded_project(lines, exclude):
    """Whether a line of the chunk has an excluded ``cwd`` (then the whole file is kept out, from
    its first line: a summary or title line before it must not be stored either)."""
    from . import capture

    return any(cwd is not None and exclude(cwd) for cwd in {capture.cwd_of(raw) for raw in lines if b'"cwd"' in raw})


def prompt_marker(text):
    """``capture.marker(text)``; capture is imported only for a text with a ``#`` in it (every marker has
    one, few prompts do): the hook's every turn does not pay for the module (about 0.15 ms)."""
    if "#" not in text:
        return None
    from . import capture

    return capture.marker(text)


def _kept_out(ctx, obj, result, first):
    """Whether the line ``obj`` (its records start at ``first``) is kept out, moving ``ctx.capture``
    on: a prompt with a marker starts keeping out, the next prompt without one ends a ``#chats-skip``.
    A prompt typed while Claude works arrives as ``attachment/queued_command``: its marker counts
    too (it ends nothing: it is part of the turn); so does one in a slash command's arguments or a
    bash-mode (``!``) command (they end nothing either: the model's own Skill calls write such
    lines within a turn). In a subagent's file, its parent's prompts decide (``_kept_run``)."""
    if ctx.agent_id:
        return _kept_run(ctx, obj, result, first)
    queued = _queued_prompt(obj)
    if queued is not None:
        return _marked(ctx, obj, result, prompt_marker(queued)) or ctx.capture is not None
    prompt = next((r.text for r in result.records[first:] if r.role == "user" and r.kind == TEXT), None)
    if prompt is None:
        return _marked(ctx, obj, result, _typed_marker(result.records[first:])) or ctx.capture is not None
    if _marked(ctx, obj, result, prompt_marker(prompt)):
        return True
    if ctx.capture == "skip":
        ctx.capture = None
        result.turns.append(("close", _str(obj.get("timestamp"))))
        return False
    return ctx.capture is not None


def _marked(ctx, obj, result, said):
    """Start keeping out when ``said`` (a marker's ``"skip"`` or ``"off"``); whether it did."""
    if said is None:
        return False
    ctx.capture = "off" if said == "off" or ctx.capture == "off" else said
    result.turns.append(("open", _str(obj.get("timestamp"))))
    return True


def _kept_run(ctx, obj, result, first):
    """A subagent's line: a prompt its parent gave it (a run's start, or a resume) is kept out, with
    the run it starts, when it was written within one of the parent's ``kept_turns``."""
    if ctx.kept_turns and any(r.role == "user" and r.kind == TEXT for r in result.records[first:]):
        stamp = _str(obj.get("timestamp"))
        if stamp is not None:
            inside = any((start is None or start <= stamp) and (end is None or stamp < end)
                         for start, end in ctx.kept_turns)
            if inside or ctx.capture == "skip":
                ctx.capture = "skip" if inside else None
    return ctx.capture is not None


_TYPED = (("<command-args>", "</command-args>"), ("<bash-input>", "</bash-input>"))


def _typed_marker(records):
    """The marker in what the person typed as a slash command's arguments or a bash-mode command
    (``<command-args>`` / ``<bash-input>``, not their output), or None."""
    for record in records:
        if record.kind != COMMAND or "#" not in record.text:
            continue
        for start, end in _TYPED:
            at = record.text.find(start)
            if at >= 0:
                stop = record.text.find(end, at)
                said = prompt_marker(record.text[at + len(start):stop if stop >= 0 else None])
                if said is not None:
                    return said
    return None


def _queued_prompt(obj):
    attachment = obj.get("attachment") if obj.get("type") == "attachment" else None
    if isinstance(attachment, dict) and attachment.get("type") == "queued_command":
        prompt = attachment.get("prompt")
        return prompt if isinstance(prompt, str) else None
    return None


def _keep_raw(obj, raw, ctx, result):
    """The line for restore: kept whole, or as a link when it is left out but has a uuid."""
    uuid = rawlines.uuid_of(obj)
    if not rawlines.kept(obj):
        if uuid:
            result.raw.append((_envelope(obj, ctx)[0], uuid, rawlines.parent_of(obj), None, _str(obj.get("timestamp"))))
        return
    result.raw.append((_envelope(obj, ctx)[0], rawlines.key_of(raw, uuid, ctx.last_uuid), None, raw,
                       _str(obj.get("timestamp"))))
    if uuid:
        ctx.last_uuid = uuid


_INVALID = object()


def _loads(raw):
    """One line as JSON, or ``_INVALID``. Never raises: a bad line must not block the lines after it.

    Invalid UTF-8 bytes are replaced; NUL bytes (what a crash can leave in a
    file) and raw control characters get a second chance; nesting too deep for
    the decoder (RecursionError) is an invalid line like any other.
    """
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("utf-8-sig", "replace")
    try:
        obj = jsonl.loads(text)
    except (ValueError, RecursionError):
        try:
            obj = jsonl.loads(text.replace("\x00", ""), strict=False)
        except (ValueError, RecursionError):
            return _INVALID
    if b"\\ud" in raw or b"\\uD" in raw:  # a JSON escape of a surrogate: a lone one cannot be stored as UTF-8
        obj = _without_lone_surrogates(obj)
    return obj


def _without_lone_surrogates(value, depth=0):
    """``value`` with each unpaired surrogate (from an escape like ``\\ud800``) replaced by U+FFFD."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if depth > 64:
        return value
    if isinstance(value, dict):
        return {_without_lone_surrogates(k, depth + 1): _without_lone_surrogates(v, depth + 1)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_without_lone_surrogates(v, depth + 1) for v in value]
    return value


def _torn_tail(raw, tries=64):
    """The record at the end of an invalid line, or ``_INVALID``.

    A writer that died mid-line leaves a torn line; the next line written to
    the file is then glued to it. That next line is a suffix of the bytes that
    starts with ``{"`` and decodes as one object with a ``type``: search for it
    from the right (a proper suffix of a valid object never decodes alone).
    """
    text = raw.decode("utf-8", "replace").replace("\x00", "")
    start = len(text)
    for _ in range(tries):
        start = text.rfind('{"', 1, start)
        if start <= 0:
            break
        try:
            obj = jsonl.loads(text[start:])
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict) and "type" in obj:
            return _without_lone_surrogates(obj)   # as _loads does: the glued line may escape one
    return _INVALID


def _parse_object(obj, ctx, result, seen_blocks):
    kind = obj.get("type")
    if kind == "user" or kind == "assistant":
        _parse_message(obj, kind, ctx, result, seen_blocks)
    elif kind == "system":
        _parse_system(obj, ctx, result)
    elif kind == "summary":
        value, leaf = obj.get("summary"), obj.get("leafUuid")
        if isinstance(value, str) and value.strip() and isinstance(leaf, str):
            result.titles.append(Title("summary", None, value.strip(), leaf))
        else:
            result.skip("empty summary")
    elif isinstance(kind, str) and kind in _TITLE_FIELDS:
        _parse_title(obj, kind, ctx, result)
    elif kind == "pr-link":
        _parse_pr_link(obj, ctx, result)
    elif isinstance(kind, str) and kind in _SKIP_TYPES:
        result.skip(_SKIP_TYPES[kind])
    else:
        result.skip(f"unknown type {str(kind)[:40]}")


_TITLE_FIELDS = {"custom-title": ("customTitle", "custom"), "agent-name": ("agentName", "agent_name"),
                 "ai-title": ("aiTitle", "ai")}


def _parse_title(obj, kind, ctx, result):
    field, source = _TITLE_FIELDS[kind]
    value, session = obj.get(field), obj.get("sessionId") or ctx.fallback_session_id
    if isinstance(value, str) and value.strip() and isinstance(session, str):
        result.titles.append(Title(source, session, value.strip()))
    else:
        result.skip("empty title")


def _parse_pr_link(obj, ctx, result):
    """A pull request the session opened: a searchable ``link`` record ("which session opened PR 42?").

    The line has no uuid of its own: the PR's URL, per session, is its identity."""
    url, number = _str(obj.get("prUrl")), obj.get("prNumber")
    if url is None:
        result.skip("empty pr-link")
        return
    repository = _str(obj.get("prRepository"))
    text = f"pull request #{number}" if isinstance(number, int) else "pull request"
    text += f" in {repository}: {url}" if repository else f": {url}"
    _emit({**obj, "uuid": f"pr-link:{url}"}, ctx, result, [("system", LINK, text)])


def _envelope(obj, ctx):
    """(session_id, agent_id, parent_session_id) of a line."""
    session = obj.get("sessionId")
    if not isinstance(session, str) or not session:
        session = ctx.fallback_session_id or "unknown"
    agent = ctx.agent_id
    if agent is None and obj.get("isSidechain") and ctx.fallback_session_id is None:
        agent = obj.get("agentId")
    if agent:
        return subagent_session_id(session, agent), str(agent), session
    return session, None, None


def _new_record(obj, ctx, role, kind, text, part):
    session, agent, parent = _envelope(obj, ctx)
    uuid = obj.get("uuid")
    if not isinstance(uuid, str) or not uuid:
        return None
    message = obj.get("message")
    message_id = _str(message.get("id")) if isinstance(message, dict) else None
    return Record(
        uuid if part == 0 else f"{uuid}#{part}", session, role, kind, text,
        timestamp=_str(obj.get("timestamp")), cwd=_str(obj.get("cwd")), git_branch=_str(obj.get("gitBranch")),
        is_sidechain=obj.get("isSidechain") is True, agent_id=agent, parent_session_id=parent,
        message_id=message_id, slug=_str(obj.get("slug")), entrypoint=_str(obj.get("entrypoint")),
    )


def _str(value):
    return value if isinstance(value, str) and value else None


def _parse_system(obj, ctx, result):
    subtype = obj.get("subtype")
    content = obj.get("content")
    if subtype in ("away_summary", "local_command") and isinstance(content, str):
        text = clean_text(content).strip()
        if not text:
            result.skip(f"empty system {subtype}")
        elif subtype == "away_summary":
            _emit(obj, ctx, result, [("system", RECAP, text)])
        else:   # a local slash command (/rename, /recap...) and its output, as older versions wrote them
            _emit(obj, ctx, result, [("user", COMMAND, text)])
        return
    if subtype != "compact_boundary":
        result.skip(f"system {str(subtype or 'status')[:40]}")
        return
    meta = obj.get("compactMetadata") if isinstance(obj.get("compactMetadata"), dict) else {}
    detail = ", ".join(f"{k} {meta[k]}" for k in ("trigger", "preTokens") if k in meta)
    text = "Conversation compacted" + (f" ({detail})" if detail else "")
    _emit(obj, ctx, result, [("system", COMPACT_BOUNDARY, text)])


def _parse_message(obj, line_type, ctx, result, seen_blocks):
    message = obj.get("message")
    if not isinstance(message, dict):
        result.skip("no message")
        return
    content = message.get("content")
    role = "assistant" if line_type == "assistant" else "user"
    if role == "user":
        parts = _user_parts(obj, content)
    else:
        parts = _assistant_parts(content, _str(message.get("id")), seen_blocks)
    if ctx.agent_id and ctx.warmup is None and role == "user":
        ctx.warmup = any(p[1] == TEXT and p[2] == "Warmup" for p in parts)
    if ctx.agent_id and ctx.warmup:
        result.skip("warmup subagent")
        return
    if not parts:
        result.skip(f"empty {role}")
        return
    _emit(obj, ctx, result, parts)


def _emit(obj, ctx, result, parts):
    """Records of one line. A part is (role, kind, text), numbered by its position,
    or (role, kind, text, number) when the number must not depend on what was
    dropped before it (assistant blocks: the index of the block in the line)."""
    emitted = False
    for i, part in enumerate(parts):
        record = _new_record(obj, ctx, part[0], part[1], part[2], part[3] if len(part) > 3 else i)
        if record is not None:
            result.records.append(record)
            emitted = True
    if not emitted:
        result.skip("no uuid")


def _user_parts(obj, content):
    if obj.get("isCompactSummary"):
        text = clean_text(_plain_text(content))
        return [("user", COMPACT_SUMMARY, text)] if text else []
    if isinstance(content, str):
        return _classify_user_text(clean_text(content), obj)
    if not isinstance(content, list):
        return []
    parts, texts = [], []
    for block in content:
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "tool_result":
            text = _tool_result_text(block)
            if text:
                parts.append(("user", TOOL_RESULT, text))
        elif btype == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif btype == "image":
            texts.append("[image]")
        elif btype == "document":
            source = block.get("source") if isinstance(block.get("source"), dict) else {}
            texts.append(f"[document {source.get('media_type') or ''}]".replace(" ]", "]"))
    joined = clean_text("\n".join(texts))
    if joined and joined != "[image]":
        parts = _classify_user_text(joined, obj) + parts
    elif joined:
        parts = [("user", TEXT, joined)] + parts
    return parts


def _classify_user_text(text, obj):
    """Kind of a user text: typed by the person (TEXT) or added by Claude Code.

    Notes wrapped around a typed prompt (an IDE note before it, a system
    reminder after it) are split off: the prompt stays TEXT, IDE and other
    notes become a META part before it, system reminders are dropped.
    """
    if not text:
        return []
    if obj.get("isMeta"):
        return [("user", META, text)]
    if text.startswith(_INTERRUPT):
        return [("user", INTERRUPT, text)]
    if text.startswith(_COMMAND_TAGS):
        return [("user", COMMAND, text)]
    if "<" in text and any(tag in text for tag in _NOTE_TAGS) and _RX.NOTE.search(text):
        rest = _RX.NOTE.sub("", text).strip()
        if rest:
            notes = "\n".join(m.group(0) for m in _RX.NOTE.finditer(text) if m.group(1) != "system-reminder")
            return ([("user", META, notes)] if notes else []) + _classify_user_text(rest, {})
        return [("user", META, text)]
    if text.startswith(_META_TAGS):  # an unclosed note, or the local-command caveat
        return [("user", META, text)]
    return [("user", TEXT, text)]


def _plain_text(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content
                         if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    return ""


def _tool_result_text(block):
    content = block.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        pieces = []
        for item in content:
            if not isinstance(item, dict):
                continue
            itype = item.get("type")
            if itype == "text" and isinstance(item.get("text"), str):
                pieces.append(item["text"])
            elif itype == "image":
                pieces.append("[image]")
            elif itype == "tool_reference":
                pieces.append(f"[tool_reference {item.get('tool_name', '')}]")
        text = "\n".join(pieces)
    else:
        text = ""
    text = clean_text(text)
    if len(text) > MAX_TOOL_RESULT_CHARS:
        cut = len(text) - MAX_TOOL_RESULT_CHARS
        text = text[:MAX_TOOL_RESULT_CHARS] + f"\n[... {cut} more characters not stored]"
    if text and block.get("is_error"):
        text = "[error] " + text
    return text


def _assistant_parts(content, message_id, seen_blocks):
    if isinstance(content, str):
        text = clean_text(content)
        return [("assistant", TEXT, text)] if text else []
    if not isinstance(content, list):
        return []
    parts = []
    for index, block in enumerate(content):
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "text" and isinstance(block.get("text"), str):
            part = (TEXT, clean_text(block["text"]))
        elif btype == "thinking" and isinstance(block.get("thinking"), str):
            part = (THINKING, clean_text(block["thinking"]))
        elif btype == "tool_use":
            part = (TOOL_USE, tool_use_line(block.get("name"), block.get("input")))
        else:
            continue
        if not part[1]:
            continue
        if message_id:  # the same block streamed twice under one message id
            # A tool call is the same call only by its id: two Edits of one file render alike.
            call_id = block.get("id") if btype == "tool_use" else None
            key = (message_id, TOOL_USE, call_id) if isinstance(call_id, str) and call_id else (message_id, part)
            if key in seen_blocks:
                continue
            seen_blocks.add(key)
        parts.append(("assistant",) + part + (index,))
    return parts


_TOOL_KEYS = {
    "Bash": ("command",), "Read": ("file_path",), "Write": ("file_path",), "Edit": ("file_path",),
    "MultiEdit": ("file_path",), "NotebookEdit": ("notebook_path",), "Glob": ("pattern", "path"),
    "Grep": ("pattern", "path"), "LS": ("path",), "WebFetch": ("url", "prompt"), "WebSearch": ("query",),
    "Task": ("description", "subagent_type", "prompt"), "Agent": ("description", "subagent_type", "prompt"),
    "Skill": ("skill",), "SlashCommand": ("command",),
}


def tool_use_line(name, tool_input):
    """A tool call as one compact, searchable line: ``[Bash] git status``."""
    name = name if isinstance(name, str) and name else "tool"
    if not isinstance(tool_input, dict):
        return f"[{name}]"
    keys = _TOOL_KEYS.get(name)
    if name == "TodoWrite" and isinstance(tool_input.get("todos"), list):
        body = "; ".join(str(t.get("content", "")) for t in tool_input["todos"] if isinstance(t, dict))
    elif keys:
        body = " ".join(str(tool_input[k]) for k in keys if tool_input.get(k) not in (None, ""))
    else:
        body = jsonl.dumps(tool_input, ensure_ascii=False, separators=(",", ":"))
    body = clean_text(body)
    if len(body) > MAX_TOOL_INPUT_CHARS:
        body = body[:MAX_TOOL_INPUT_CHARS] + " [...]"
    return f"[{name}] {body}".rstrip()
