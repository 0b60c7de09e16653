"""What text is embedded for a message: its recipe.

A message is not embedded as its bare content: the first ``PREVIOUS_CHARS`` of the
session's previous text message go first, then who speaks and when, then the content::

    user: how do I make the migration test stop flaking?
    assistant (8 May 2023): <content, or one chunk of it>

Each chunk of a long message gets the same prefix; chunk spans stay in content
coordinates. Queries are embedded as they are. BENCHMARKS.md has the figures
(LoCoMo semantic recall@10 0.301 -> 0.426; own query set recall@1 0.900 -> 0.986).

Not every kind is worth its vectors (issue 14, BENCHMARKS.md "What is embedded, per
kind"): ``LEAN``, the default, embeds text, compaction summaries, recaps, links and
tool calls whole, the first ``TOOL_RESULT_CHARS`` of a tool result, and nothing of the
kinds search leaves out by default (thinking, meta, commands, interrupts, compaction
markers); full-text search still indexes every character. On the labelled sets it
finds what embedding everything finds, for a third of the tokens. ``CONTEXT`` is
everything whole (the default before); ``plain`` the bare content.

The recipe is part of the embedding space: ``RecipeProvider`` is a provider whose
``space`` carries ``{"text": recipe.name}`` in its options, so vectors of one text
and another are never compared. ``with_text(provider, settings)`` is the one place
that applies the configured recipe (``embed_text = lean | context | plain``, then
``,KIND=CHARS`` limits; ``plain`` embeds the bare content in the provider's own space,
as before recipes existed).
"""

from dataclasses import dataclass
from datetime import datetime

from .. import transcript
from ..errors import ConfigError
from .chunking import Chunk, chunk_text, embed_texts

LABELS = {"user": "user", "assistant": "assistant", "system": "system"}
PREVIOUS_CHARS = 300       # this much of the previous text message goes first


@dataclass(frozen=True)
class Recipe:
    """What text is embedded for a message: ``header`` + content, after ``previous_chars`` of the
    session's previous text message when set. ``name`` goes into the space options.

    ``limits``: ``((kind, chars), ...)``: of a message of that kind only the first ``chars``
    characters are embedded (cut back to a whitespace near the limit); 0 embeds nothing (the
    message gets no vector; full-text search still finds it)."""

    name: str
    previous_chars: int = 0
    limits: tuple = ()
    bare: tuple = ()          # kinds embedded after their header only (measured, not kept: bench_policy.py)

    def limit(self, kind):
        return dict(self.limits).get(kind)

    @property
    def skipped(self):
        """The kinds this recipe embeds nothing of (limit 0)."""
        return tuple(kind for kind, chars in self.limits if chars == 0)


TOOL_RESULT_CHARS = 300   # of a tool result, LEAN embeds this much (its head; full text has the rest)
# The kinds search leaves out by default (transcript.DEFAULT_KINDS): LEAN embeds nothing of them.
# Spelled out, not derived: a change here is a new recipe (LEAN's name, hence its space, must change).
UNSEARCHED = ("command", "compact_boundary", "interrupt", "meta", "thinking")

HEADER = Recipe("speaker-date-1")
CONTEXT = Recipe("context-1", PREVIOUS_CHARS)
LEAN = Recipe("lean-1", PREVIOUS_CHARS, tuple(sorted([*((k, 0) for k in UNSEARCHED),
                                                      ("tool_result", TOOL_RESULT_CHARS)])))
SETTINGS = {"lean": LEAN, "context": CONTEXT, "plain": None}   # values of the ``embed_text`` setting
DEFAULT = "lean"


def recipe_for(value):
    """The ``Recipe`` of an ``embed_text`` setting value (None for ``plain``).

    ``context,tool_result=1000,thinking=0`` is ``context`` with per-kind limits (see ``Recipe``),
    ``lean,tool_result=2000`` is ``lean`` with another; the name, hence the space, says them
    (``context-1,thinking=0,tool_result=1000``, ``lean-1,tool_result=2000``)."""
    text = str(value or DEFAULT).strip().lower()
    base, *parts = [p.strip() for p in text.split(",")]
    if base not in SETTINGS or (parts and SETTINGS[base] is None):
        raise ConfigError(f"embed_text must be one of {', '.join(SETTINGS)} (lean and context may be followed "
                          f"by ,KIND=CHARS limits), not {value!r}")
    recipe = SETTINGS[base]
    if not parts:
        return recipe
    limits = {}
    for part in parts:
        kind, _, chars = (p.strip() for p in part.partition("="))
        if not kind or not chars.isdigit():
            raise ConfigError(f"embed_text: {part!r} is not KIND=CHARS (e.g. tool_result=1000)")
        if kind not in transcript.KINDS:
            raise ConfigError(f"embed_text: {kind!r} is no kind of message; the kinds: {', '.join(transcript.KINDS)}")
        limits[kind] = int(chars)
    name = ",".join([recipe.name, *(f"{k}={v}" for k, v in sorted(limits.items()))])
    return Recipe(name, recipe.previous_chars, tuple(sorted({**dict(recipe.limits), **limits}.items())))


NAMED = {r.name: r for r in (HEADER, CONTEXT, LEAN)}


def skipped_kinds(options):
    """The kinds a space embeds nothing of, from its options (``{"text": "lean-1,tool_result=2000"}``):
    the recipe's named base, then its ``KIND=CHARS`` parts. Unknown names (and no recipe): none."""
    base, *parts = str((options or {}).get("text") or "").split(",")
    limits = dict(NAMED[base].limits) if base in NAMED else {}
    for part in parts:
        kind, _, chars = part.partition("=")
        if chars.isdigit():
            limits[kind] = int(chars)
    return tuple(sorted(kind for kind, chars in limits.items() if chars == 0))


def head(text, chars):
    """The first ``chars`` characters of ``text``, cut back to just after a whitespace in the last
    fifth when there is one (a span of the content: chunk coordinates stay the message's)."""
    if len(text) <= chars:
        return text
    for i in range(chars, max(0, chars - chars // 5), -1):
        if text[i - 1].isspace():
            return text[:i]
    return text[:chars]


def with_text(provider, settings=None):
    """``provider`` embedding the configured text (``settings.embed_text``; default lean)."""
    recipe = recipe_for(getattr(settings, "embed_text", None) if settings is not None else None)
    return provider if recipe is None else RecipeProvider(provider, recipe)


def recipe_of(provider):
    """The recipe ``provider`` embeds messages with (None: the bare content)."""
    return provider.recipe if isinstance(provider, RecipeProvider) else None


def header(role, created_at, labels=None):
    """``"Caroline (8 May 2023): "``: who speaks, and when (the date only; no date, no brackets)."""
    label = (labels or LABELS).get(role, role)
    day = _day(created_at)
    return f"{label} ({day}): " if day else f"{label}: "


def _day(created_at):
    if not created_at:
        return None
    try:
        moment = datetime.fromisoformat(str(created_at).replace("Z", "+00:00"))
    except ValueError:
        return None
    return f"{moment.day} {moment:%B %Y}"


def prefix(message, labels=None, recipe=HEADER):
    """What goes before a message's content (each of its chunks) when it is embedded."""
    before = ""
    previous = message.get("previous")
    if recipe.previous_chars and previous and message.get("kind") not in recipe.bare:
        text = " ".join(previous["content"][:recipe.previous_chars].split())
        before = f"{(labels or LABELS).get(previous['role'], previous['role'])}: {text}\n"
    return before + header(message["role"], message["created_at"], labels)


class _Prefixed:
    """``provider`` seen through a fixed prefix: chunks are sized so that prefix + chunk fits."""

    def __init__(self, provider, prefix):
        self.provider, self.prefix, self.model_id = provider, prefix, provider.model_id

    def fits(self, text, *kind):
        return self.provider.fits(self.prefix + text, *kind)

    def window_chars(self, text, *kind):
        return max(1, self.provider.window_chars(self.prefix + text, *kind) - len(self.prefix))


def embed_messages(provider, messages, labels=None, recipe=HEADER):
    """Per message (dicts with ``content``, ``role``, ``created_at``, optionally ``kind`` and
    ``previous``: a dict with ``role`` and ``content``), its ``[models.Chunk]``: the content's chunks
    (spans in content coordinates), each embedded after the message's ``prefix``; a kind the recipe
    limits, only its head. ``recipe`` None: the bare content."""
    if recipe is None:
        return embed_texts(provider, [m["content"] or "" for m in messages])
    spans, texts = [], []
    for message in messages:
        before = prefix(message, labels, recipe)
        content = message["content"] or ""
        limit = recipe.limit(message.get("kind")) if recipe.limits else None
        if limit is not None:
            content = head(content, limit)
        spans.append(chunk_text(content, _Prefixed(provider, before)))
        texts += [before + chunk for _, _, chunk in spans[-1]]
    vectors = iter(provider.embed_documents(texts))
    return [[Chunk(n, start, end, next(vectors)) for n, (start, end, _) in enumerate(chunks)] for chunks in spans]


class RecipeProvider:
    """``provider`` with the recipe in its space: its vectors are of the recipe's text, not the content.

    Everything else (embedding, window, name, ``base_url``...) is the provider's own;
    queries are embedded as they are.
    """

    def __init__(self, provider, recipe=HEADER):
        self.provider, self.recipe = provider, recipe

    def __getattr__(self, name):
        return getattr(self.provider, name)

    @property
    def space(self):
        from .base import Space   # numpy: not for what reads a recipe's limits alone (``chats status``)
        base = self.provider.space
        return Space(base.provider, base.model, base.dimensions, {**base.options, "text": self.recipe.name})

    def __enter__(self):          # dunders are not looked up through ``__getattr__``
        return self

    def __exit__(self, *exc):
        self.provider.close()

    def __repr__(self):
        return f"<{type(self).__name__} {self.recipe.name} {self.provider!r}>"


def same_model(a, b):
    """Whether spaces ``a`` and ``b`` (None: no space) are one model's, differing at most in the embedded text."""
    def bare(space):
        return (space.provider, space.model, int(space.dimensions),
                {k: v for k, v in space.options.items() if k != "text"})
    return a is not None and b is not None and bare(a) == bare(b)


def with_previous(rows):
    """Message dicts of (id, session_id, role, kind, created_at, content) rows in session order, each
    with ``previous``: the session's last text message before it (None for the first)."""
    out, last = [], {}
    for i, session, role, kind, created_at, content in rows:
        message = {"id": i, "role": role, "kind": kind, "created_at": created_at, "content": content,
                   "previous": last.get(session)}
        if kind == "text":
            last[session] = message
        out.append(message)
    return out
