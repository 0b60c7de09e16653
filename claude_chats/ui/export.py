"""A session as one file to keep or share: self-contained HTML, or Markdown.

``html(session, messages)``: one HTML document with its CSS inline and no script at all (its CSP
meta says so: nothing loads, nothing runs), each message as the session page renders it
(``render.message``). ``markdown(session, messages)``: prose as markdown when it holds no raw
HTML, image or unsafe link (else fenced, shown as its source); tool calls, results and the rest
in fences longer than any run of backticks they hold.

Both take what ``Searcher.conversation`` returns (the session dict and its message dicts; ``read``
reads a whole conversation): redaction is the searcher's (``redact_results``), as for the MCP tools.
"""

import re

from markupsafe import escape

from .. import transcript
from . import render

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; base-uri 'none'; form-action 'none'"
_CSS = """
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1d1d1f}
header.session dl{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem;font-size:.9rem}
header.session dt{color:#666}
article.msg{border-top:1px solid #ddd;padding:.6rem 0}
.msg-head{font-size:.8rem;color:#666;display:flex;gap:.6rem}
.role-user .role{color:#0b5cad}.role-assistant .role{color:#7a3e9d}
pre{white-space:pre-wrap;word-break:break-word;background:#f5f5f7;padding:.5rem;border-radius:4px;
font:13px/1.4 ui-monospace,monospace}
details>summary{cursor:pointer;color:#444}.size{color:#888;font-size:.8rem}
.compaction-label{font-weight:600;color:#a15c00;border-left:3px solid #a15c00;padding-left:.5rem}
.kind-compact_boundary,.kind-compact_summary{background:#fff8ec}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .5rem}
.align-right{text-align:right}.align-center{text-align:center}
"""
_PROSE = (transcript.TEXT, transcript.RECAP)


MAX_MESSAGES = 50_000     # messages an export reads at most (a session of 10,000 is 20 pages)


def read(searcher, session_id, message_chars=100_000, per_page=500, kinds=None):
    """(session, messages) of a whole conversation read through ``searcher`` page by page (redacted
    as it redacts), at most ``MAX_MESSAGES``; ``kinds``: the message kinds (default: the
    conversation's, thinking left out)."""
    session, messages, start = None, [], 0
    while start is not None and len(messages) < MAX_MESSAGES:
        page = searcher.conversation(session_id, start_seq=start, limit=per_page, max_chars=None,
                                     message_chars=message_chars, kinds=kinds)
        session = session or page["session"]
        messages += page["messages"]
        start = page["next_start_seq"]
    return session, messages[:MAX_MESSAGES]


def html(session, messages):
    """The session as a self-contained HTML document (a string)."""
    name = render.title(session)
    rows = "".join(f"<dt>{escape(label)}</dt><dd>{escape(value)}</dd>" for label, value in render.facts(session))
    body = "".join(render.message(m) for m in messages)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
            f'<meta name="referrer" content="no-referrer">\n<title>{escape(name)}</title>\n'
            f"<style>{_CSS}</style></head>\n<body>\n"
            f'<header class="session"><h1>{escape(name)}</h1><dl>{rows}</dl></header>\n'
            f"<main>\n{body}</main>\n</body></html>\n")


def markdown(session, messages):
    """The session as a Markdown document (a string)."""
    out = [f"# {inline(render.title(session))}", ""]
    out += [f"- **{label}:** {inline(value)}" for label, value in render.facts(session)]
    for m in messages:
        out += ["", _heading(m), "", _md_body(m)]
    return "\n".join(out) + "\n"


def _heading(m):
    seq = m.get("seq") if isinstance(m.get("seq"), int) else "?"
    role = render.one_of(m.get("role"), render.ROLES)
    kind = render.one_of(m.get("kind"), render.KINDS)
    stamp = f" · {inline(m['timestamp'])}" if isinstance(m.get("timestamp"), str) else ""
    return f"## {seq} · {role} · {kind}{stamp}"


def _md_body(m):
    text = m.get("text") if isinstance(m.get("text"), str) else ""
    kind = m.get("kind")
    if kind == transcript.COMPACT_SUMMARY:
        return "*Compacted: the summary Claude Code wrote of the conversation before this point.*\n\n" + _prose(text)
    if kind in _PROSE:
        return _prose(text)
    if kind == transcript.COMPACT_BOUNDARY:
        return "*The conversation was compacted here.*\n\n" + fenced(text)
    return fenced(text)


def _prose(text):
    """Prose as markdown when it renders inert, else in a fence (shown as its source)."""
    if len(text) <= render.MAX_MARKDOWN and render.work(text) <= render.MAX_WORK and renders_inert(text):
        return text
    return fenced(text)


def fenced(text, info=""):
    """``text`` in a fence of backticks longer than any run of backticks it holds."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


_PUNCT = re.compile(r"([\\`*_\[\]<>!|~&#])")


def inline(value):
    """A stored value (a name, a path) as one line of plain Markdown text: punctuation escaped."""
    return _PUNCT.sub(r"\\\1", " ".join(str(value).split()))


def renders_inert(text):
    """Whether ``text`` read as CommonMark (raw HTML allowed, as many renderers of a ``.md`` file do)
    holds no raw HTML, no image and no link outside http(s), mailto and ``#``, and ends every block
    it opens (a fence left open would swallow the messages after it): then it may stay markdown."""
    tokens = _permissive().parse(text + "\n\n" + _SENTINEL)
    if [t.type for t in tokens[-3:]] != ["heading_open", "inline", "heading_close"] \
            or tokens[-2].content != _SENTINEL[2:]:
        return False
    for token in _walk(tokens):
        if token.type in ("html_block", "html_inline", "image"):
            return False
        if token.type == "link_open" and not render.safe_href(token.attrGet("href")):
            return False
    return True


_SENTINEL = "# the end of a message"


def _walk(tokens):
    for token in tokens:
        yield token
        if token.children:
            yield from _walk(token.children)


_permissive_md = None


def _permissive():
    """The parser a lax renderer would be: raw HTML on, every link target taken."""
    global _permissive_md
    if _permissive_md is None:
        from markdown_it import MarkdownIt

        _permissive_md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
        _permissive_md.validateLink = lambda url: True
    return _permissive_md
