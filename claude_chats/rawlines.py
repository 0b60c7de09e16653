"""Transcript lines kept as Claude Code wrote them, so that ``chats restore`` can write a session back.

Which lines (decided by resuming restored transcripts with the real Claude Code 2.1.332,
tests/claude_code/test_restore.py): every line ``claude --resume`` reads back into the
conversation (``user``, ``assistant``, ``system``, ``attachment``) and the metadata it keeps
(titles, ``summary``, ``pr-link``, ``mode``, ``permission-mode``, ``agent-name``, and any type
not listed below), less what it only logs or regenerates: the request logs (``api-request*``,
a copy of the whole request, half of a 2.1.332 transcript), ``attachment/prompt_snapshot`` (the
system prompt, again, every turn), ``progress`` (streamed tool output of older versions), and
bookkeeping (``queue-operation``, ``last-prompt``, ``file-history-*``, ``cost-state``,
``atis-latch``, ``tools-used``). Resuming a transcript without them sends the same messages to
the API as resuming the original (the environment, context reminders and attachments included).

A line left out that has a uuid is kept as a *link* (its uuid and ``parentUuid``, no bytes):
other lines name it as their parent, and ``relink`` joins the chain around it on restore.

Identity (``key``): a line's uuid; a line without one, ``<crc32 of its bytes>@<uuid of the kept
line before it>``, so a re-read of the file (or of a restored copy) finds it stored, while a
value set again later (a title renamed back) is a line of its own.

Each line is compressed on its own with zlib and the preset dictionary of ``linedict`` (about 2.5x
on real transcripts; one row per line, so lines are deduplicated, redacted, purged and pushed one by
one; rows packed before 2026-12-05 have no dictionary, and read as before), by ``chats sync``: the hook
stores the bytes as it read them (``import zlib`` alone costs it 0.3 ms, compressing a turn's lines
another half millisecond). ``unpack`` takes either. ``redact_line`` redacts inside the JSON (its
strings, and the values their keys name as secrets), never the raw text, so a redacted line is still
valid JSON.

Stdlib only, and not even zlib on the hook's path (it is imported by ``pack`` and ``unpack``).
"""

from . import jsonl

DROPPED = frozenset({
    "api-request", "api-request-resumed", "api-request-shape", "api-request-blob", "progress",
    "queue-operation", "last-prompt", "file-history-snapshot", "file-history-delta", "cost-state",
    "atis-latch", "tools-used",
})
DROPPED_ATTACHMENTS = frozenset({"prompt_snapshot"})
LEVEL = 6


def kept(obj):
    """Whether a transcript line (decoded) is kept for restore."""
    kind = obj.get("type")
    if not isinstance(kind, str) or kind in DROPPED:
        return False
    if kind == "attachment":
        attachment = obj.get("attachment")
        return not (isinstance(attachment, dict) and attachment.get("type") in DROPPED_ATTACHMENTS)
    return True


def uuid_of(obj):
    value = obj.get("uuid")
    return value if isinstance(value, str) and value else None


def parent_of(obj):
    value = obj.get("parentUuid")
    return value if isinstance(value, str) and value else None


def key_of(raw, uuid, previous):
    """The identity of a kept line: its uuid, else its checksum after the kept line before it."""
    return uuid or f"{checksum(raw):016x}@{previous or '-'}"


def checksum(raw, limit=1 << 16):
    """FNV-1a (64 bits) of the line's first ``limit`` bytes and its length: stable across runs, and no
    ``zlib`` to import for it (lines without a uuid are short: titles, modes, links)."""
    value = 0xCBF29CE484222325 ^ len(raw)
    for byte in raw[:limit]:
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value


def pack(raw):
    """The line compressed, with the preset dictionary of transcript lines (``linedict``); a packed
    one as it is."""
    if is_packed(raw):
        return raw
    import zlib

    from .linedict import CURRENT

    stream = zlib.compressobj(LEVEL, zlib.DEFLATED, zlib.MAX_WBITS, 8, zlib.Z_DEFAULT_STRATEGY, CURRENT)
    return stream.compress(raw) + stream.flush()


# The most bytes one kept line may unpack to. A kept line is a message Claude Code sent to the API (or a
# smaller metadata line), and the API takes requests of at most 32 MB; the largest line of the real
# corpus is 1.05 MB (a user line with images). 64 MiB is twice what any line can be; a zlib bomb (1.2 GB
# from 1.2 MB) stops there instead of being allocated whole.
LINE_LIMIT = 64 << 20


class UnpackError(ValueError):
    """A kept line that cannot be unpacked: not zlib, cut short, or more than ``LINE_LIMIT`` bytes."""


def unpack(blob, limit=LINE_LIMIT):
    """The line's bytes, from a packed or an unpacked row; ``UnpackError`` for a packed row that is
    not a whole zlib stream or unpacks to more than ``limit`` bytes (never more is allocated), and for
    a line that refers to its messages' text (``REFERS``: only the journal can read it back)."""
    if blob[:2] in (REFERS, REFERS_OWN):
        raise UnpackError("a kept line refers to its messages' text: only its journal can read it back")
    if not is_packed(blob):
        return blob
    return _inflate(blob, limit)


def _inflate(blob, limit):
    import zlib

    from .linedict import DICTIONARIES, dictionary_id

    named = dictionary_id(blob)
    if named is None:
        stream = zlib.decompressobj()
    elif named in DICTIONARIES:
        stream = zlib.decompressobj(zdict=DICTIONARIES[named])
    else:
        raise UnpackError(f"a kept line is packed with a dictionary this version does not have ({named:08x})")
    try:
        raw = stream.decompress(blob, limit)
    except zlib.error as exc:
        raise UnpackError(f"a kept line is not zlib data ({exc})") from None
    if not stream.eof:
        raise UnpackError(f"a kept line unpacks to more than {limit} bytes" if len(raw) >= limit
                          else "a kept line's zlib data is cut short")
    return raw


# The most bytes the kept lines of one session (its subagents' too) may unpack to: a thousand times
# the largest real transcript (1.2 MB), and memory for them is still bounded when another machine
# pushed a bomb line after line.
SESSION_LIMIT = 1 << 30


def unpack_rows(rows, limit=SESSION_LIMIT, read=None):
    """``{conversation: [(key, parent, line bytes or None)]}`` from ``(conversation, key, parent, row's
    line or None)`` in order, each line unpacked (``unpack``); ``UnpackError`` past ``limit`` bytes in all.
    ``read(conversation, key, line, extra, limit)``: how the journal reads its rows, which then carry
    more columns after the line (``extra``: ``localstore.keptlines``, lines that refer to their messages'
    text and their own fields)."""
    out, left = {}, limit
    for conversation, key, parent, line, *extra in rows:
        raw = None
        if line is not None:
            if left <= 0:   # (a max_length of 0 is no bound at all)
                raise UnpackError(f"the kept lines unpack to more than {limit} bytes")
            bound = min(LINE_LIMIT, left)
            raw = unpack(line, bound) if read is None else read(conversation, key, line, extra, bound)
            left -= len(raw)
        out.setdefault(conversation, []).append((key, parent, raw))
    return out


def is_packed(blob):
    """zlib streams start with 0x78 ('x'); a JSON line with '{' (or white space)."""
    return blob[:1] == b"x"


# -- lines that refer to their messages' text ------------------------------------------------
#
# Most of a kept line is the text of the messages made from it, which the journal holds already
# (``messages.content``). ``refer`` takes each JSON string of the line that holds, byte for byte, the
# JSON of one of those texts (the whole string, or all of it but the white space around it, which
# the parser strips) and leaves its message's id in place of the text's bytes (``\x00<id>\x00``: a
# raw NUL is in no line that is referred, JSON escapes it); ``rebuild`` puts the texts back. The
# journal stores such a line packed behind ``REFERS_OWN`` (``REFERS`` before 2026-12-06, when it began
# to refer to its own fields too: below) with ``raw_lines.packed`` = ``REFERRING``; a
# message it names is deleted only with it (the same session, the same time:
# ``localstore.keptlines``). A message rewritten by the redaction comes back redacted in its line:
# the string holds the message's JSON, whatever its text becomes.

REFERS = b"x\x00"       # the start of a referring line: no JSON line, and no zlib stream (0x7800 fails zlib's
#   header check), so a version before this one reading such a row (``is_packed``: 'x') says "not zlib data"
REFERS_OWN = b"x\x02"   # ... one that also refers to its row's own fields (``refer_own``; 0x7802 fails it too),
#   so a version that reads only ``REFERS`` says the line "does not" refer, never rebuilds it without them
REFERRING = 2           # raw_lines.packed of a referring line (1: packed whole, 0: as read)
MIN_REFERRED = 48       # bytes of JSON: a shorter text stays in the line (a reference is 4-10 bytes)
_MARK = None            # re.compile'd on first use (``re`` is not imported on the hook's path)
_ESCAPE = None
_BLANKS = (b"\\n", b"\\r", b"\\t")   # white space as JSON writes it in a string, besides the space


def text_json(text):
    """The JSON string of ``text`` (quoted) as Claude Code writes it: non-ASCII as it is; a lone
    surrogate, which UTF-8 cannot hold, escaped (JavaScript's ``JSON.stringify`` does the same)."""
    try:
        return jsonl._quote_utf8(text).encode("utf-8")
    except UnicodeEncodeError:
        return jsonl._quote(text).encode("ascii")


def refer(raw, texts):
    """``raw`` with each text of ``texts`` (``[(message id, text)]``) that one of its JSON strings holds
    (whole, or with white space around it) replaced by a reference; None when none is (or the line
    holds a raw NUL)."""
    if b"\x00" in raw:
        return None
    wanted = {}
    for mid, text in texts:
        if len(text) * 6 + 2 >= MIN_REFERRED:   # (a character is at most 6 bytes of JSON)
            quoted = text_json(text)
            if len(quoted) >= MIN_REFERRED:
                wanted.setdefault(quoted[1:-1], int(mid))
    spans = []
    for inner, mid in wanted.items():
        at = raw.find(inner)
        while at >= 0:
            end = at + len(inner)
            opening = _blank_before(raw, at)
            if raw[opening:opening + 1] == b'"' and _blank_after(raw, end) and _starts_string(raw, opening):
                spans.append((at, end, mid))
            at = raw.find(inner, end)
    if not spans:
        return None
    spans.sort()
    parts, last = [], 0
    for start, end, mid in spans:
        if start >= last:   # (two texts found in one string: the first is referred)
            parts += [raw[last:start], b"\x00%d\x00" % mid]
            last = end
    parts.append(raw[last:])
    return b"".join(parts)


def _blank_before(raw, at):
    """Where the white space (as a JSON string writes it) just before ``at`` starts, less one."""
    while at > 0:
        if raw[at - 1] == 0x20:
            at -= 1
        elif at >= 2 and raw[at - 2:at] in _BLANKS:
            at -= 2
        else:
            break
    return at - 1


def _blank_after(raw, at):
    """Whether only white space (as a JSON string writes it) is between ``at`` and a quote."""
    size = len(raw)
    while at < size:
        if raw[at] == 0x20:
            at += 1
        elif raw[at:at + 2] in _BLANKS:
            at += 2
        else:
            return raw[at] == 0x22
    return False


def _starts_string(raw, at):
    """Whether the quote at ``at`` opens a JSON string: outside every string before it (an even count
    of quotes once the escapes are taken out, and no backslash escaping it)."""
    global _ESCAPE
    if _ESCAPE is None:
        import re
        _ESCAPE = re.compile(rb"\\.", re.S)
    before = _ESCAPE.sub(b"", raw[:at])
    return not before.endswith(b"\\") and before.count(b'"') % 2 == 0


def referred(marked):
    """The message ids a referring line's bytes name."""
    return {int(m) for m in _marks().findall(marked) if m.isdigit()}


def rebuild(marked, texts, limit=LINE_LIMIT, own=None):
    """The line's bytes: each reference of ``marked`` replaced by its message's text as JSON writes it
    (``texts``: ``{id: text}``), or by its row's own field (``own``: ``own_values``); ``UnpackError`` for
    a message or a field that is not there, or past ``limit`` bytes (counted before the line is built: a
    row naming one long text a million times allocates nothing)."""
    marks, encoded, size = _marks(), {}, len(marked)
    own = own or {}
    for match in marks.finditer(marked):
        name = match.group(1)
        if name not in encoded:
            if not name.isdigit():
                if name not in own:
                    raise UnpackError(f"a kept line refers to its row's {_FIELD_NAMES[name]}, "
                                      f"which it is not given")
                encoded[name] = own[name]
            else:
                found = texts.get(int(name))
                if found is None:
                    raise UnpackError(f"a kept line refers to message {int(name)}, "
                                      f"which its journal no longer has")
                encoded[name] = text_json(found)[1:-1]
        size += len(encoded[name]) - (match.end() - match.start())
        if size > limit:
            raise UnpackError(f"a kept line unpacks to more than {limit} bytes")
    return marks.sub(lambda match: encoded[match.group(1)], marked)


def _marks():
    global _MARK
    if _MARK is None:
        import re
        _MARK = re.compile(rb"\x00([0-9]{1,18}|[kst])\x00")
    return _MARK


def pack_referring(marked):
    """A referring line's bytes (``refer``, ``refer_own``) packed behind ``REFERS_OWN``."""
    return REFERS_OWN + pack(marked)


def unpack_referring(blob, limit=LINE_LIMIT):
    """The bytes of a referring line, its references in place (``rebuild`` puts the texts back, and the
    row's own fields where ``refers_own``)."""
    if blob[:2] not in (REFERS, REFERS_OWN):
        raise UnpackError("a kept line marked as referring to its messages' text does not")
    return _inflate(blob[2:], limit)


def refers_own(blob):
    """Whether a referring line (as stored) may refer to its row's own fields: written since 2026-12-06."""
    return blob[:2] == REFERS_OWN


# -- a line's own fields -----------------------------------------------------------------------
#
# Every kept line repeats its row's identity: its uuid (the row's key), its session's id and its
# timestamp (the row's created_at), 51 of the 297 bytes a packed line took at a million messages
# (uuids are hex: zlib's dictionary cannot help). ``refer_own`` leaves each ``"uuid":"<key>"``,
# ``"sessionId":"<session>"`` and ``"timestamp":"<created_at>"`` of a line as ``"uuid":"\x00k\x00"``
# (``s``, ``t``); ``rebuild`` puts the row's values back. A line so stored is read with its row, never
# apart from it (the push, restore, a redaction: ``localstore.keptlines``).

_OWN = ((b"k", b'"uuid":"'), (b"s", b'"sessionId":"'), (b"t", b'"timestamp":"'))
_FIELD_NAMES = {b"k": "key", b"s": "session", b"t": "timestamp"}
OWN_MIN = 8   # bytes of a value: a shorter one stays in the line (a reference is 3)


def own_values(key, session, created_at):
    """``{mark: bytes}`` of a row's own fields as a line's JSON writes them (``refer_own``, ``rebuild``):
    only strings, none holding a NUL."""
    values = {}
    for mark, value in ((b"k", key), (b"s", session), (b"t", created_at)):
        if isinstance(value, str) and len(value) * 6 >= OWN_MIN:
            if value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
                encoded = value.encode()   # (a uuid, a timestamp: JSON writes them as they are)
            else:
                encoded = text_json(value)[1:-1]
            if len(encoded) >= OWN_MIN and b"\x00" not in encoded:
                values[mark] = encoded
    return values


def refer_own(line, own):
    """``line`` (a line's bytes, or ``refer``'s result) with each of its own fields whose value is its
    row's (``own``: ``own_values``) left as a reference; None when none is. One field of each name is
    taken, found from the end (Claude Code writes them after the message); the same field written again
    earlier stays as it is."""
    spans = []
    for mark, field in _OWN:
        value = own.get(mark)
        if value is not None:
            at = line.rfind(field + value + b'"')
            if at >= 0:   # (two such spans never overlap: each is a field's name and its whole string)
                spans.append((at + len(field), at + len(field) + len(value), mark))
    if not spans:
        return None
    parts, last = [], 0
    for start, end, mark in sorted(spans):
        parts += [line[last:start], b"\x00", mark, b"\x00"]
        last = end
    parts.append(line[last:])
    return b"".join(parts)


def refer_line(raw, texts, own):
    """The line's bytes with its messages' texts (``refer``) and its own fields (``refer_own``) left as
    references; None when nothing is referred, or the line holds a raw NUL.

    ``rebuild`` reads the references back as they were left: a reference is ``\x00`` + digits or a field's
    letter + ``\x00``, and none can be read across two (no value holds a NUL, the line held none, and a
    text's reference is followed by a quote, a space or a backslash, never by a digit or a field's letter).
    Each line was first rebuilt and compared as it was packed: ``chats import`` at 1M went from 3,568 to
    3,381 msgs/s; the property tests hold it instead (``tests/localstore/test_kept_lines_own.py``)."""
    if b"\x00" in raw:
        return None
    marked = refer(raw, texts) if texts else None
    return refer_own(raw if marked is None else marked, own) or marked


# -- redaction inside the JSON ---------------------------------------------------------------


def redact_line(raw, clean):
    """The line (bytes) redacted inside its JSON (``redact.redact_json``: its strings through
    ``clean``, a value whose key names a secret, what the context rules see across its strings,
    what is nested too deep); ``raw`` itself when nothing changed; ``None`` (the line is kept as a
    link, its bytes not at all) when it cannot be read as JSON, so a line the redaction cannot see
    into is never kept nor pushed as it is. Read as the parser reads it (``transcript._loads``):
    a raw control character, a NUL, a byte that is not UTF-8 do not keep a line from being redacted."""
    from .redact import redact_json

    try:
        obj = jsonl.loads(raw)
    except (ValueError, RecursionError):   # UnicodeDecodeError is a ValueError
        try:
            obj = jsonl.loads(raw.decode("utf-8-sig", "replace").replace("\x00", ""), strict=False)
        except (ValueError, RecursionError):
            return None
    changed, was_changed = redact_json(obj, clean)
    if not was_changed:
        return raw
    try:
        return jsonl.dumps(changed, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:   # a lone surrogate (written as an escape): escaped again
        return jsonl.dumps(changed, separators=(",", ":")).encode("utf-8")


def redact_packed(blob, clean):
    """``redact_line`` over a packed line: the same blob when nothing changed (``None``: a link)."""
    raw = unpack(blob)
    new = redact_line(raw, clean)
    if new is None:
        return None
    return pack(blob) if new is raw else pack(new)   # unchanged: not compressed a second time


SHORT_STRING = 200   # characters: the strings of a line that repeat (session id, cwd, version, branch, types)
REMEMBERED = 100_000  # short strings at most, then forgotten all at once: memory stays bounded


def remembering(redact, limit=REMEMBERED):
    """``redact`` (a pure function of the text) remembering its answers for short strings: the lines
    of a batch repeat most of their strings, each of which would be scanned again."""
    seen = {}

    def clean(text):
        if len(text) > SHORT_STRING:
            return redact(text)
        found = seen.get(text)
        if found is None:
            if len(seen) >= limit:
                seen.clear()
            found = seen[text] = redact(text)
        return found

    return clean


# -- restore ---------------------------------------------------------------------------------


def relink(rows):
    """The lines to write back (bytes, in order) from ``[(key, parent, raw or None)]`` of one
    conversation: a line whose ``parentUuid`` names a link (a line left out) gets the nearest kept
    ancestor instead (or null); other lines are written as they were kept."""
    links = {key: parent for key, parent, raw in rows if raw is None}
    present = {key for key, _parent, raw in rows if raw is not None}
    out = []
    for _key, _parent, raw in rows:
        if raw is None:
            continue
        if links and b'"parentUuid"' in raw:
            raw = _relinked(raw, links, present)
        out.append(raw)
    return out


def _relinked(raw, links, present):
    obj = jsonl.loads(raw)
    parent = parent_of(obj)
    if parent is None or parent in present or parent not in links:
        return raw
    seen = set()
    while parent is not None and parent not in present and parent in links and parent not in seen:
        seen.add(parent)
        parent = links[parent]
    obj["parentUuid"] = parent if parent in present else None
    return jsonl.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
