"""A stored message as safe HTML: markdown for prose, collapsed blocks for tool calls and results.

Stored text is hostile: a transcript may hold ``<script>``, ``<img onerror=...>``, a markdown
``javascript:`` link or HTML in a tool result. Here every byte of it is escaped: markdown is
parsed without raw HTML (``html`` off: tags are shown as text), links keep only http(s),
mailto and ``#`` targets (anything else is shown as its text), images are never loaded (a link
to them, or their alt text), and ids and classes are built from validated values only (a kind
and a role from fixed sets, a sequence number as an int). A text too long or too costly to parse
(``work``) is shown as escaped preformatted text.
"""

import re
from datetime import datetime
from urllib.parse import quote

from markupsafe import Markup, escape

from .. import transcript

MAX_MARKDOWN = 200_000          # characters parsed as markdown; a longer text is shown as it is, escaped
# markdown-it-py's work depends on what a text holds more than on its length: each character that
# may start markup ("terminator": ``*``, ``[``, ``<``, ``&``...) ends a text token (about 8 µs), a
# line costs about 40, a "[" 30 more, a "<" (an autolink tried) 90 more, an emphasis delimiter 15
# more, against 0.05 per plain character (under load; scripts/bench_render.py measures them). A
# text whose estimate passes MAX_WORK (about 50 ms on an idle core) is shown as it is, escaped.
_TERMINATORS = str.maketrans("", "", "!#$%&*+-:<=>@[\\]^_`{}~")
_COSTS = {"[": 30, "\n": 40, "*": 15, "_": 15, "~": 15, "|": 5, "&": 15, "<": 90, "!": 40}
MAX_WORK = 150_000
ROLES = ("user", "assistant", "system")
KINDS = transcript.KINDS
SAFE_SCHEMES = ("http://", "https://", "mailto:")
SESSION_PATH = "/session/"
_LANG = re.compile(r"[^A-Za-z0-9_+.#-]")
_MORE = re.compile(r"… \[(\d+) more characters\]$")
_TOOL = re.compile(r"\[([A-Za-z0-9_.:-]{1,64})\]")
_md = None


# -- markdown -------------------------------------------------------------------------------

def safe_href(url):
    """Whether a link target may be followed: http(s), mailto, or an anchor on the same page."""
    return isinstance(url, str) and (url.startswith("#") or url.lower().startswith(SAFE_SCHEMES))


def markdown(text, breaks=False):
    """``text`` (markdown) as safe HTML; too long or too costly to parse, escaped preformatted text.
    ``breaks``: a line break is a break (what a person typed), not a space (CommonMark)."""
    if not isinstance(text, str) or not text:
        return Markup("")
    if len(text) > MAX_MARKDOWN or work(text) > MAX_WORK:
        return Markup(f'<pre class="plain">{escape(text)}</pre>')
    md = _parser()
    tokens = md.parse(text, {})
    _align_by_class(tokens)
    options = _with_breaks(md.options) if breaks else md.options
    return Markup(md.renderer.render(tokens, options, {"links": []}))


def _with_breaks(options):
    from markdown_it.utils import OptionsDict

    return OptionsDict({**options, "breaks": True})


def work(text):
    """The estimated cost of parsing ``text`` as markdown (see ``_COSTS``)."""
    markup = len(text) - len(text.translate(_TERMINATORS))
    return len(text) // 20 + 8 * markup + sum(cost * text.count(c) for c, cost in _COSTS.items())


def _parser():
    """CommonMark with tables and strikethrough, raw HTML off, links checked (built once: ~5 ms)."""
    global _md
    if _md is None:
        from markdown_it import MarkdownIt

        md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
        md.validateLink = safe_href
        for name, rule in (("link_open", _link_open), ("link_close", _link_close), ("image", _image),
                           ("fence", _fence)):
            md.add_render_rule(name, rule)
        _md = md
    return _md


def _link_open(self, tokens, idx, options, env):
    """A link whose target is not safe is dropped, its text kept (``_link_close`` pairs with it)."""
    href = tokens[idx].attrGet("href")
    keep = safe_href(href)
    env["links"].append(keep)
    if not keep:
        return ""
    title = tokens[idx].attrGet("title")
    title = f' title="{escape(title)}"' if title else ""
    return f'<a href="{escape(href)}"{title} rel="noopener noreferrer nofollow">'


def _link_close(self, tokens, idx, options, env):
    return "</a>" if env["links"] and env["links"].pop() else ""


def _image(self, tokens, idx, options, env):
    """An image is not loaded: a link to it when its address is safe, else its alt text."""
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env)
    label = escape(f"[image: {alt}]" if alt else "[image]")
    src = token.attrGet("src")
    if safe_href(src) and not src.startswith("#"):
        return f'<a class="image-link" href="{escape(src)}" rel="noopener noreferrer nofollow">{label}</a>'
    return f'<span class="image">{label}</span>'


def _fence(self, tokens, idx, options, env):
    """A code fence as ``<pre><code class="language-x">``, its language reduced to safe characters."""
    token = tokens[idx]
    lang = _LANG.sub("", token.info.split()[0])[:40] if token.info.strip() else ""
    cls = f' class="language-{lang}"' if lang else ""
    return f"<pre><code{cls}>{escape(token.content)}</code></pre>\n"


def _align_by_class(tokens):
    """Table cells aligned by class, not by a ``style`` attribute (which the page's CSP refuses)."""
    for token in tokens:
        style = token.attrGet("style") if token.type in ("th_open", "td_open") else None
        if style:
            token.attrs.pop("style")
            token.attrSet("class", "align-" + style.rpartition(":")[2].strip())


# -- messages -------------------------------------------------------------------------------

def message(msg, link=None, target=False):
    """One message dict (``Searcher.conversation``: seq, role, kind, timestamp, text) as an
    ``<article class="msg role-R kind-K" id="seq-N">``; ``link``: the subagent conversation this
    tool call started; ``target``: the message a link pointed at (class ``target``)."""
    seq = _seq(msg.get("seq"))
    role, kind = one_of(msg.get("role"), ROLES), one_of(msg.get("kind"), KINDS)
    text = msg.get("text") if isinstance(msg.get("text"), str) else ""
    classes = f"msg role-{role} kind-{kind}" + (" target" if target else "")
    ident = f' id="seq-{seq}"' if seq is not None else ""
    body = _prose(text, breaks=True) if kind == transcript.TEXT and role == "user" else \
        _BODIES.get(kind, _preformatted)(text)
    return Markup(f'<article class="{classes}"{ident}>{_head(seq, role, kind, msg.get("timestamp"))}'
                  f'{body}{subagent_link(link)}</article>\n')


def subagent_link(session_id, label="open the subagent's conversation"):
    """``<a class="subagent-link">`` to a subagent's page; nothing when the id is not a valid one."""
    return _link("subagent-link", session_href(session_id), label)


def subagent_links(messages, subagents, searcher=None):
    """``{call seq: subagent session id}`` of a page's ``messages``; ``subagents``: the session's
    subagent rows (``Searcher.subagents``). With ``searcher``, their first prompts are read, the
    surest match (``ui.subagents``); without, the agent ids in the results and the times only."""
    from . import subagents as matching

    subs = matching.read_subagents(searcher, subagents) if searcher is not None else \
        [matching.Subagent.of(row) for row in subagents]
    return matching.links(messages, subs)


def parent_link(searcher, info, siblings=None):
    """``{"href", "name"}`` of the way back from a subagent's page (``info``: its session dict) to the
    call that started it in its parent's (to the parent's page when no call can be told); None for
    a session that is not a subagent's. ``siblings``: the parent's subagent rows (default:
    ``searcher.subagents(parent)``)."""
    from . import subagents as matching

    parent = matching.parent_of(info)
    if parent is None:
        return None
    rows = searcher.subagents(parent) if siblings is None else siblings
    _, seq = matching.back(searcher, info, rows)
    name = searcher.conversation(parent, limit=1, max_chars=None)["session"].get("name")
    return {"href": session_href(parent, seq), "name": name or parent, "seq": seq}


def _link(cls, href, label):
    return Markup(f'<a class="{cls}" href="{escape(href)}">{escape(label)}</a>') if href else Markup("")


def session_href(session_id, seq=None):
    """``/session/<id>`` (``?at=N#seq-N`` with ``seq``) for a valid session or subagent id, else None."""
    if not session_id or transcript.conversation_problem(session_id):
        return None
    href = SESSION_PATH + quote(session_id, safe=":")
    seq = _seq(seq)
    return href if seq is None else f"{href}?at={seq}#seq-{seq}"


def _seq(value):
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def one_of(value, allowed):
    """``value`` when it is one of ``allowed`` (a role, a kind), else "other": what a class may say."""
    return value if value in allowed else "other"


def _head(seq, role, kind, timestamp):
    anchor = f'<a class="seq" href="#seq-{seq}">#{seq}</a>' if seq is not None else ""
    return (f'<header class="msg-head"><span class="role">{role}</span> <span class="kind">'
            f'{_KIND_LABELS.get(kind, kind)}</span> {time_element(timestamp)} {anchor}</header>')


def time_element(timestamp):
    """``<time datetime="...">YYYY-MM-DD HH:MM:SS</time>`` of an ISO timestamp (UTC); empty when not one."""
    if not isinstance(timestamp, str):
        return Markup("")
    try:
        moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return Markup("")
    shown = moment.strftime("%Y-%m-%d %H:%M:%S") + (" UTC" if moment.utcoffset() is not None else "")
    return Markup(f'<time datetime="{escape(moment.isoformat())}">{shown}</time>')


def size(text):
    """"3 lines, 120 characters" of a message's text (its whole length when the page cut it)."""
    more = _MORE.search(text)
    chars = len(text) - len(more.group(0)) + int(more.group(1)) if more else len(text)
    lines = text.count("\n") + 1 if text else 0
    cut = " (cut)" if more else ""
    return f"{lines:,} line{'s' if lines != 1 else ''}, {chars:,} character{'s' if chars != 1 else ''}{cut}"


def _collapsed(cls, label, text, preview=""):
    preview = f' <span class="preview">{escape(preview)}</span>' if preview else ""
    return (f'<details class="{cls}"><summary><span class="label">{escape(label)}</span>{preview} '
            f'<span class="size">{size(text)}</span></summary><pre>{escape(text)}</pre></details>')


PREVIEW_CHARS = 100


def _tool_use(text):
    """A tool call: its name and first line, the whole call folded below; one that the first line shows
    whole (``[Bash] git status``) is that line only, with nothing to unfold that says it again."""
    named = _TOOL.match(text)
    name = named.group(1) if named else "tool"
    rest = text[named.end():].strip() if named else text
    first = rest.split("\n", 1)[0]
    if first == rest and len(rest) <= PREVIEW_CHARS and not _MORE.search(text):
        return (f'<p class="tool-call"><span class="label">{escape(name)}</span> '
                f'<code class="preview">{escape(rest)}</code></p>')
    return _collapsed("tool-call", name, text, first[:PREVIEW_CHARS] + ("…" if len(first) > PREVIEW_CHARS else ""))


def _tool_result(text):
    if text.startswith("[error] "):
        return _collapsed("tool-result error", "error", text)
    return _collapsed("tool-result", "result", text)


def _compact_summary(text):
    return ('<p class="compaction-label">Compacted: the summary Claude Code wrote of the conversation '
            f'before this point ({size(text)})</p><div class="body md">{markdown(text)}</div>')


def _compact_boundary(text):
    return (f'<p class="compaction-label">The conversation was compacted here: what came before was '
            f'replaced by a summary</p><p class="note">{escape(text)}</p>')


def _prose(text, breaks=False):
    return f'<div class="body md">{markdown(text, breaks)}</div>'


def _preformatted(text):
    return f'<pre class="body">{escape(text)}</pre>'


def _line(text):
    return f'<p class="body">{escape(text)}</p>'


_COMMAND_PART = re.compile(r"<command-(name|args)>(.{0,2000}?)</command-\1>", re.S)


def _command(text):
    """A slash command as the person typed it (``/doctor args``), its stored wrapper folded below."""
    parts = dict(_COMMAND_PART.findall(text[:20_000]))
    if not parts.get("name"):
        return _preformatted(text)
    typed = " ".join(p.strip() for p in (parts["name"], parts.get("args", "")) if p.strip())
    return f'<p class="body command"><code>{escape(typed)}</code></p>' + _collapsed("command-raw", "as stored", text)


_BODIES = {
    transcript.TEXT: _prose, transcript.RECAP: _prose, transcript.LINK: _line,
    transcript.TOOL_USE: _tool_use, transcript.TOOL_RESULT: _tool_result,
    transcript.THINKING: lambda text: _collapsed("thinking", "thinking", text),
    transcript.META: lambda text: _collapsed("meta", "note from Claude Code", text),
    transcript.COMPACT_SUMMARY: _compact_summary, transcript.COMPACT_BOUNDARY: _compact_boundary,
    transcript.COMMAND: _command, transcript.INTERRUPT: _line,
}
_KIND_LABELS = {"text": "text", "tool_use": "tool call", "tool_result": "tool result",
                "compact_summary": "compaction summary", "compact_boundary": "compaction", "meta": "note",
                "link": "pull request"}


# -- a session's header ------------------------------------------------------------------------

def facts(session):
    """(label, value) pairs of a session dict for a page's or an export's header (values are text,
    to be escaped by whoever shows them): project, branch, dates, origin, machine, id."""
    out = [("Project", session.get("project_path")), ("Branch", session.get("git_branch")),
           ("Started", session.get("started_at")), ("Last message", session.get("last_at")),
           ("Origin", origin(session)), ("Machine", session.get("machine")),
           ("Messages", session.get("message_count")), ("Session", session.get("session_id")),
           ("Subagent of", session.get("parent_session_id"))]
    return [(label, str(value)) for label, value in out if value not in (None, "")]


def origin(session):
    """"a person's session", "machine-made (sdk-cli)"; a subagent's says so."""
    entry = session.get("entrypoint")
    said = f"machine-made ({entry})" if session.get("machine_made") else "a person's session" + (
        f" ({entry})" if entry else "")
    return ("subagent, " + said) if session.get("is_subagent") else said


def title(session):
    """The session's name, else its id."""
    return session.get("name") or session.get("session_id") or "conversation"
