"""Issue 21, item 3: redaction of a raw line removes every value that the message-text redaction removes.

Generated transcript lines (a tool call's input, a tool result, a ``toolUseResult``, a prompt) whose
values are JSON shapes of every kind under keys that name secrets and keys that do not, holding
planted secrets (random passwords, AWS-like keys, digit PINs, tokens, alone or inside a sentence,
between ANSI colours or split by a NUL).
The lines go through the real parser, whose message text is redacted as sync redacts it; each
planted secret the message text's redaction removes (it is in the text and not in the redacted
text) must be gone from the redacted raw line too, whatever its depth, its key or its shape. And the
raw line stays JSON, its envelope untouched. Fixed seeds; CLAUDE_CHATS_LONG_TESTS=1 runs many more.
"""

import json

from hypothesis import example, given, seed
from hypothesis import strategies as st

from claude_chats import rawlines, transcript
from claude_chats.redact import redact
from tests.support.fuzzing import fuzz_settings
from tests.support.redaction_corpus import ALNUM, DIGITS, fake

SECRET_KEYS = ["password", "aws_secret_access_key", "api_key", "apiKey", "token", "GITHUB_TOKEN", "client_secret",
               "credentials", "db_password_hint", "session_key", "Authorization", "x-api-key", "passphrase",
               "refresh_token", "secretAccessKey", "PWD"]
OTHER_KEYS = ["host", "note", "x", "key", "output_tokens", "input_tokens", "type", "value", "args", "env", "config",
              "my password is ", "headers", "", "tokenizer", "keys", "name", "cwd"]
TEMPLATES = ["{s}", "token={s}", "password: {s}", "my password is {s}", "Authorization: Bearer {s}",
             "postgres://app:{s}@db.internal/main", "export API_KEY={s}", "--password {s}", "the secret is {s} ok",
             "password: \x1b[33m{s}\x1b[0m", "pass\x00word={s}"]   # the message text loses NULs and ANSI escapes
SHAPES = [(ALNUM + "!#$%&*+-", 10, 24), (ALNUM + "/+", 40, 40), (DIGITS, 6, 12), (ALNUM, 8, 32)]


class Planted:
    """A secret to plant: a shape and a template; made unique when the line is built."""

    def __init__(self, shape, length, template, as_number):
        self.shape, self.length, self.template, self.as_number = shape, length, template, as_number


planted = st.builds(Planted, st.integers(0, len(SHAPES) - 1), st.integers(0, 24), st.sampled_from(TEMPLATES),
                    st.booleans())
filler = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=False, allow_infinity=False),
                   st.sampled_from(["ok", "db.internal", "connected", "${DB_PASSWORD}", "<your-key>", "", "changeme",
                                    "line one\nline two", "tokens: 12\nmore", "[REDACTED:password]", "ü é 🎉"]),
                   st.text(max_size=20))
leaf = st.one_of(planted, filler)
shape = st.recursive(leaf, lambda kids: st.one_of(
    st.lists(kids, max_size=4),
    st.dictionaries(st.sampled_from(SECRET_KEYS + OTHER_KEYS), kids, max_size=5)), max_leaves=14)


def _made(value, secrets, depth=0):
    """``value`` with each ``Planted`` replaced by a unique secret (collected in ``secrets``)."""
    if isinstance(value, Planted):
        alphabet, low, high = SHAPES[value.shape]
        secret = fake(f"planted {len(secrets)}", min(high, max(low, value.length)), alphabet)
        if alphabet == DIGITS:
            secret = "9" + secret[1:]   # no leading zero: a number as JSON writes it
            if value.as_number:
                secrets.append(secret)
                return int(secret)
        secrets.append(secret)
        return value.template.format(s=secret)
    if isinstance(value, list):
        return [_made(v, secrets, depth + 1) for v in value]
    if isinstance(value, dict):
        return {k: _made(v, secrets, depth + 1) for k, v in value.items()}
    return value


def _lines(kind, tool, value, deep):
    """A line of ``kind`` holding ``value`` where Claude Code puts such values."""
    if deep:
        for _ in range(deep):
            value = {"x": value}
    envelope = {"parentUuid": None, "isSidechain": False, "cwd": "/work/proj", "sessionId": "sess-1",
                "version": "2.1.0", "uuid": "00000000-0000-4000-8000-000000000001",
                "timestamp": "2026-01-01T00:00:00.000Z"}
    if kind == "tool_use":
        tool_input = {"command": value} if tool == "Bash" else value if isinstance(value, dict) else {"value": value}
        return {**envelope, "type": "assistant", "message": {
            "id": "msg_1", "type": "message", "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": tool, "input": tool_input}]}}
    if kind == "tool_result":
        content = value if isinstance(value, str) else [{"type": "text", "text": json.dumps(value)}]
        return {**envelope, "type": "user", "toolUseResult": value, "message": {
            "role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": content}]}}
    return {**envelope, "type": "user", "message": {"role": "user", "content": json.dumps(value)}}


def _written(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


@seed(2103)
@fuzz_settings(300, 20_000)
# a sentence a key starts, its value redacted by another key after it; the same twice over
@example({"my password is ": Planted(0, 0, "{s}", False), "password": 1}, "tool_use", "mcp__db__connect", 0, False)
@example({"my password is ": Planted(0, 0, "Authorization: Bearer {s}", False), "c": "x"}, "tool_result", "Bash", 0,
         True)
@example(Planted(0, 0, "password: \x1b[33m{s}\x1b[0m", False), "tool_result", "Bash", 0, False)
# found by the long run: a finding dropped for overlapping a placeholder took the shorter ones it covered
@example([Planted(0, 0, "my password is {s}", False), "[REDACTED:password]",
          {"password": Planted(0, 0, "{s}", False), "aws_secret_access_key": None,
           "db_password_hint": Planted(0, 0, "{s}", False)}], "tool_use", "Bash", 0, False)
@example([Planted(0, 0, "my password is {s}", False), "[REDACTED:password]",
          {"password": 0.0, "aws_secret_access_key": None, "db_password_hint": 1.3158955161223154e+16}],
         "tool_use", "mcp__db__connect", 0, False)
@given(shape, st.sampled_from(["tool_use", "tool_result", "prompt"]), st.sampled_from(["mcp__db__connect", "Bash"]),
       st.sampled_from([0, 0, 0, 3, 40]), st.booleans())
def test_a_raw_line_loses_every_secret_its_message_text_loses(value, kind, tool, deep, ascii_only):
    secrets = []
    obj = _lines(kind, tool, _made(value, secrets), deep)
    raw = json.dumps(obj, ensure_ascii=ascii_only).encode()
    texts = [r.text for r in transcript.parse_lines(raw + b"\n", transcript.FileContext.for_path("/p/sess-1.jsonl")).records]
    redacted = "\n".join(redact(t) for t in texts)
    removed = [s for s in secrets if any(s in t for t in texts) and s not in redacted]

    new = rawlines.redact_line(raw, redact)
    assert new is not None
    after = json.loads(new)
    for key in ("type", "uuid", "parentUuid", "sessionId", "timestamp", "cwd"):
        assert after.get(key) == obj.get(key)
    left = [s for s in removed if s in new.decode() or s in _written(after)]
    assert left == [], (left, texts)
    if deep > 32 and kind == "tool_use":   # nested past the bound: nothing of it is left
        assert not [s for s in secrets if s in _written(after)]
    assert rawlines.redact_line(new, redact) == new   # idempotent
