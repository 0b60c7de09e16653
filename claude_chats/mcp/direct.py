"""``search_memory`` as the front (``mcp.front``) answers it itself, also while FastMCP still loads.

FastMCP's import takes 0.7-0.8 s of a two-core machine and the first request it serves
0.2 s more, so a search Claude asked right after the opening waited about a second at a
million messages although the search itself takes 0.05 s; and once FastMCP is up, its
path for a call (argument validation, a worker thread, the result serialized twice, the
SDK's models, the front's pass-through) costs a warm search 3-4 ms of its 30. The front
answers the call itself, with the same ``Searcher`` FastMCP's tools use (``mcp.opening``)
and the same call (``search_memory`` below, which the FastMCP tool runs too), in the form
FastMCP gives: the result's JSON as text and as ``structuredContent``, a claude-chats
error as ``isError`` with its message, the era's envelope (``resultType``, ``_meta``)
recorded from FastMCP in ``answers.json`` with the early answers.

The front answers only what it is sure FastMCP would take as it is (``arguments``):
known arguments of exactly the types and ranges of the tool's schema, a well-formed
envelope of a version FastMCP's answers were recorded under. Anything else, and any
failure that is not a claude-chats error, goes to FastMCP, which answers as before.
"""

import json
import math

from .. import transcript
from ..errors import ClaudeChatsError
from ..search import bounds
from ..search.core import MAX_CHARS
from . import current, stdin

TOOL = "search_memory"
# search_memory's schema, which the FastMCP tool (mcp.server) is declared with and the front checks (CHECKS)
LIMITS = (1, 50)                   # hits
MAX_CHARS_LIMITS = (1000, 100_000)   # the result's size budget
MODES = ("hybrid", "semantic", "fulltext")
ROLES = ("user", "assistant", "system")
ORIGINS = ("human", "machine", "any")
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"   # a modern-era request's _meta key


def search_memory(searcher, query, limit=5, project_path=None, mode="hybrid", session_id=None, role=None,
                  since=None, until=None, include_subagents=True, kinds=None, max_chars=MAX_CHARS, origin="human"):
    """What the ``search_memory`` tool runs, FastMCP's and the front's alike (the defaults are the
    tool schema's: ``tests/mcp/test_direct_search.py`` compares them)."""
    return searcher.search(query, limit=limit, mode=mode, project_path=current.project_path(project_path),
                           session_id=current.session_id(session_id), role=role, since=since, until=until,
                           include_subagents=include_subagents, kinds=kinds, max_chars=max_chars, origin=origin)


def error_text(exc):
    """What a tool answers to ``exc`` (an ``isError`` result), or None for an exception FastMCP reports."""
    if isinstance(exc, ClaudeChatsError):
        return bounds.cut(str(exc), bounds.ERROR_CHARS)   # an id echoed back stays small
    if isinstance(exc, UnicodeEncodeError):
        # A JSON escape of a lone surrogate ("\\ud800") cannot be matched against UTF-8 text.
        return "an argument is not valid Unicode text (a lone surrogate); send UTF-8 text"
    return None


# --- the calls the front answers ------------------------------------------------------------------


def _text_or_none(value):
    return value is None or type(value) is str


def _whole(low, high):
    return lambda value: type(value) is int and low <= value <= high


def _one_of(*choices):
    return lambda value: type(value) is str and value in choices


def _kinds(value):
    return value is None or (type(value) is list and all(type(k) is str and k in transcript.KINDS for k in value))


CHECKS = {   # the schema of FastMCP's tool (mcp.server), strictly: what pydantic would coerce goes to FastMCP
    "query": lambda value: type(value) is str,
    "limit": _whole(*LIMITS),
    "project_path": _text_or_none,
    "mode": _one_of(*MODES),
    "session_id": _text_or_none,
    "role": lambda value: value is None or _one_of(*ROLES)(value),
    "since": _text_or_none,
    "until": _text_or_none,
    "include_subagents": lambda value: type(value) is bool,
    "kinds": _kinds,
    "max_chars": _whole(*MAX_CHARS_LIMITS),
    "origin": _one_of(*ORIGINS),
}


def arguments(params, envelope_version):
    """The keyword arguments of a ``tools/call`` of ``search_memory`` the front may answer itself, or None.

    ``envelope_version``: the protocol version a modern-era request names in ``_meta`` (it must
    also carry the client's capabilities, as FastMCP requires), None in the legacy era."""
    if not isinstance(params, dict) or params.get("name") != TOOL:
        return None
    meta = params.get("_meta", {})
    if not isinstance(meta, dict) or stdin.META_KEY in meta:
        return None   # a lone surrogate was replaced: FastMCP's tool says so
    if envelope_version is not None and not isinstance(meta.get(CLIENT_CAPABILITIES), dict):
        return None
    args = params.get("arguments")
    if not isinstance(args, dict) or "query" not in args:
        return None
    if not all(name in CHECKS and CHECKS[name](value) for name, value in args.items()):
        return None
    return dict(args)


def answer(mid, envelope, outcome):
    """The JSON-RPC line FastMCP would write for ``outcome`` (the result, or an error's text), or None
    when FastMCP would refuse the result (a non-finite number)."""
    import pydantic_core   # FastMCP's serializer (floats are written as it writes them)

    if isinstance(outcome, str):
        result = {"content": [{"text": outcome, "type": "text"}], "isError": True}
    elif not _finite(outcome):
        return None
    else:
        text = pydantic_core.to_json(outcome, fallback=str)
        structured = json.loads(text)   # as FastMCP gives it: serialized, then read back
        result = {"content": [{"text": text.decode(), "type": "text"}], "isError": False,
                  "structuredContent": structured}
    return pydantic_core.to_json({"jsonrpc": "2.0", "id": mid, "result": {**result, **envelope}}) + b"\n"


def _finite(value):
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(_finite(v) for v in value)
    return True
