"""Which Task/Agent call started which subagent conversation, from what the stores keep.

The journal keeps a tool call as one line (``[Agent] <description> <subagent_type> <prompt>``,
``transcript.tool_use_line``), not its ``tool_use`` id, and a subagent as its own conversation
``<session>:agent-<id>`` whose first message is the prompt its parent gave it. So a call is
matched to a subagent, in this order, by:

1. the prompt: the call's line holds the subagent's first prompt (both may be cut by a page; a
   prompt under ``_SHORTEST`` characters says too little);
2. the agent id Claude Code 2.x writes at the end of the call's result
   (``agentId: a4ca7529859c158c2 (use SendMessage ...``): the latest call before that result;
3. the time: the latest call at most ``WINDOW`` seconds before the subagent's first message.

Each call starts at most one subagent and each subagent has at most one call; the latest subagent
picks first, the latest call that fits, so parallel calls pair in order. Pure: the caller
reads the messages and the subagents' first prompts (``Subagent``) from whichever store answers.
"""

import re
from dataclasses import dataclass
from datetime import datetime

from .. import transcript

CALL_TOOLS = ("[Task]", "[Agent]")
WINDOW = 120.0        # seconds from a call to its subagent's first message, for the match by time
_KEY = 200            # characters of a prompt that must be found in a call's line
_TRIES = 20           # places of them in the line looked at
_SHORTEST = 16        # a shorter prompt says too little to match a call by
_AGENT_ID = re.compile(r"\bagentId: ([A-Za-z0-9_-]{1,128}) \(use SendMessage")
_CUTS = (re.compile(r"… \[\d+ more characters\]$"), re.compile(r" \[\.\.\.\]$"))


@dataclass(frozen=True)
class Subagent:
    """A subagent conversation: its id, when its first message was written, its first prompt."""

    session_id: str
    started_at: str | None = None
    prompt: str | None = None

    @property
    def agent_id(self):
        return self.session_id.partition(transcript.SUBAGENT_MARK)[2] or None

    @classmethod
    def of(cls, session, messages=()):
        """From a session dict (``session_id``, ``started_at``: a backend's or a ``Searcher``'s; ``first_at``:
        the journal's) and its first messages."""
        prompt = next((m["text"] for m in messages if m.get("role") == "user" and m.get("kind") == transcript.TEXT
                       and isinstance(m.get("text"), str)), None)
        return cls(session["session_id"], session.get("started_at") or session.get("first_at"), prompt)


def links(messages, subagents):
    """``{call seq: subagent session id}`` for the Task/Agent calls among ``messages`` (a parent's
    message dicts: seq, role, kind, timestamp, text) and ``subagents`` (``Subagent``s of it)."""
    calls = [m for m in messages if _is_call(m)]
    # the latest subagent first, each taking the latest call that fits: parallel calls then pair in order
    left = sorted((s for s in subagents if _valid(s.session_id)), key=lambda s: s.started_at or "", reverse=True)
    named = _named_agents(messages)
    found = {}
    for match in (_by_prompt, _by_agent_id, _by_time):
        for sub in list(left):
            seq = match(sub, [c for c in calls if c["seq"] not in found], named)
            if seq is not None:
                found[seq] = sub.session_id
                left.remove(sub)
    return found


def call_of(session_id, messages, subagents):
    """The seq of the call among ``messages`` (the parent's) that started ``session_id``, or None."""
    return next((seq for seq, sub in links(messages, subagents).items() if sub == session_id), None)


def parent_of(session):
    """The parent session id of a subagent session dict (``parent_session_id``, else from its id)."""
    parent = session.get("parent_session_id")
    if not parent and transcript.SUBAGENT_MARK in (session.get("session_id") or ""):
        parent = session["session_id"].partition(transcript.SUBAGENT_MARK)[0]
    return parent if parent and not transcript.conversation_problem(parent) else None


# -- reading them through a Searcher (either store) -----------------------------------------------

def read_subagents(searcher, rows, message_chars=2_000):
    """``Subagent``s of subagent session rows (``session_id``, ``started_at``), each with its first
    prompt read through ``searcher`` (``Searcher.conversation``: redacted as it redacts)."""
    out = []
    for row in rows:
        if _valid(row.get("session_id")):
            page = searcher.conversation(row["session_id"], limit=3, kinds=(transcript.TEXT,), max_chars=None,
                                         message_chars=message_chars)
            out.append(Subagent.of(row, page["messages"]))
    return out


def read_calls(searcher, session_id, message_chars=2_000, pages=40, per_page=500):
    """The Task/Agent calls and the tool results of a session (what ``links`` reads), through
    ``searcher``, at most ``pages`` pages of ``per_page``: what a subagent's page needs to link back."""
    out, start = [], 0
    for _ in range(pages):
        page = searcher.conversation(session_id, start_seq=start, limit=per_page, max_chars=None,
                                     kinds=(transcript.TOOL_USE, transcript.TOOL_RESULT), message_chars=message_chars)
        out += [m for m in page["messages"] if m["kind"] == transcript.TOOL_RESULT or _is_call(m)]
        start = page["next_start_seq"]
        if start is None:
            break
    return out


def back(searcher, session, siblings):
    """(parent id, seq of the call that started it) of a subagent session dict, read through
    ``searcher`` (``render.parent_link`` makes the link); ``siblings``: the session rows of the
    parent's subagents, this one among them (they tell parallel calls apart). (None, None) for a
    session that is not a subagent's; the seq is None when no call can be told."""
    parent = parent_of(session)
    if parent is None or not session.get("session_id"):
        return None, None
    calls = read_calls(searcher, parent)
    return parent, call_of(session["session_id"], calls, read_subagents(searcher, siblings))


def _is_call(m):
    return (m.get("kind") == transcript.TOOL_USE and isinstance(m.get("text"), str)
            and m["text"].startswith(CALL_TOOLS) and isinstance(m.get("seq"), int))


def _valid(session_id):
    return isinstance(session_id, str) and not transcript.conversation_problem(session_id)


# -- the three ways -----------------------------------------------------------------------------

def _by_prompt(sub, calls, named):
    """The call whose line holds the subagent's prompt: the latest before the subagent began."""
    if not sub.prompt:
        return None
    prompt, prompt_cut = _uncut(sub.prompt)
    if len(prompt) < _SHORTEST:
        return None
    matching = [c for c in calls if _holds(c["text"], prompt, prompt_cut)]
    return _latest_before(matching, sub.started_at)


def _by_agent_id(sub, calls, named):
    """The latest call before the first result that names the subagent's agent id (and before the
    subagent began). The id ends the result's text: a page that cut the text has lost it."""
    result = named.get(sub.agent_id)
    if result is None:
        return None
    return _latest_before([c for c in calls if c["seq"] < result], sub.started_at)


def _by_time(sub, calls, named):
    """The latest call at most ``WINDOW`` seconds before the subagent's first message."""
    start = _seconds(sub.started_at)
    if start is None:
        return None
    near = [c for c in calls if (t := _seconds(c.get("timestamp"))) is not None and 0 <= start - t <= WINDOW]
    return _latest_before(near, sub.started_at)


def _named_agents(messages):
    """{agent id: seq of the first tool result that names it}"""
    named = {}
    for m in messages:
        if m.get("kind") == transcript.TOOL_RESULT and isinstance(m.get("text"), str) and "agentId: " in m["text"]:
            for agent in _AGENT_ID.findall(m["text"][-2000:]):
                named.setdefault(agent, m["seq"])
    return named


def _latest_before(calls, started_at):
    """The latest of ``calls`` written before ``started_at`` (all of them when it is unknown); None
    when there is none."""
    start = _seconds(started_at)
    before = [c for c in calls if start is None or (t := _seconds(c.get("timestamp"))) is None or t <= start + 1]
    return max(c["seq"] for c in before) if before else None


def _holds(line, prompt, prompt_cut):
    """Whether a call's line holds ``prompt`` (the last thing the line says): at a place where its
    first ``_KEY`` characters are, the rest agrees as far as both go; uncut, both end together."""
    body, body_cut = _uncut(line)
    key, at = prompt[:_KEY], -1
    for _ in range(_TRIES):
        at = body.find(key, at + 1)
        if at < 0:
            return False
        tail = body[at:]
        n = min(len(tail), len(prompt))
        if tail[:n] == prompt[:n] and (body_cut or prompt_cut or len(tail) == len(prompt)):
            return True
    return False


def _uncut(text):
    """(text with white space collapsed and without a page's or a line's cut marker, whether it was cut)."""
    text = text.strip()
    for marker in _CUTS:
        cut = marker.search(text)
        if cut:
            return " ".join(text[:cut.start()].split()), True
    return " ".join(text.split()), False


def _seconds(stamp):
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
