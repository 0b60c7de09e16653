"""Keeping what the searcher returns within a size budget: characters of the result as JSON.

Claude Code caps what an MCP tool may return (25,000 tokens by default), so each
tool takes a budget (``max_chars``) and its result, serialised as JSON, never
exceeds it. The searcher fits a result by shrinking what matters least first
(hit text, neighbours, long names, then whole hits or messages); ``squeeze`` is
the last resort that holds for any stored text: every string and list cut down
until the result fits.
"""

import json

from .core import shorten

NAME_CHARS = 200       # a session name, project path or git branch as a result shows it, at first
NOTE_CHARS = 400       # each note
QUERY_ECHO = 300       # the query, as the result repeats it
MAX_QUERY_CHARS = 2000  # what is searched of a query: a longer one is cut (and a note says so)
ERROR_CHARS = 600      # an error message returned to an MCP client
NAMES = ("name", "session_name", "project_path", "git_branch")


def size(obj):
    """Characters of ``obj`` as JSON (UTF-8 text, not ASCII escapes: what a client counts)."""
    return len(json.dumps(obj, ensure_ascii=False, default=str))


def cut(text, limit):
    """``text`` as it is when it has at most ``limit`` characters, else ``shorten``ed to them."""
    if not isinstance(text, str) or len(text) <= limit:
        return text
    return shorten(text, limit)


def cut_json(text, budget):
    """The longest start of ``text`` (with an ellipsis) whose JSON string takes at most ``budget``
    characters (quotes, backslashes and control characters take more than one)."""
    if size(text) <= budget:
        return text
    keep = max(0, budget - 3)
    while keep > 0 and size(text[:keep] + "…") > budget:
        keep -= max(1, (size(text[:keep] + "…") - budget) // 2)
    return text[:max(0, keep)] + "…" if keep > 0 else ""


def names_cut(row, limit=NAME_CHARS):
    """``row`` with its session name, project path and git branch in at most ``limit`` characters."""
    return {**row, **{k: cut(row[k], limit) for k in NAMES if isinstance(row.get(k), str)}}


def cap_query(query, limit=MAX_QUERY_CHARS):
    """(what is searched of ``query``, its length when it was cut, else 0): a huge query is cut at a
    word boundary near ``limit`` characters."""
    if len(query) <= limit:
        return query, 0
    head = query[:limit]
    space = head.rfind(" ", limit - 200)
    return (head[:space] if space > 0 else head).rstrip(), len(query)


def squeeze(result, max_chars):
    """``result`` cut down until it fits ``max_chars``: strings shortened, then lists shortened (the
    last resort, whatever the stored text; ``truncated`` set when anything was cut)."""
    if not max_chars or size(result) <= max_chars:
        return result
    for limit in (2000, 1000, 500, 200, 100, 50, 20, 8):
        for items in (None, 10, 3, 1, 0):
            fitted = _squeezed(result, limit, items)
            if isinstance(fitted, dict):
                fitted["truncated"] = True
            if size(fitted) <= max_chars:
                return fitted
    return {"truncated": True, "notes": ["the result did not fit max_chars"]}


def _squeezed(obj, limit, items):
    if isinstance(obj, str):
        return cut(obj, limit)
    if isinstance(obj, dict):
        return {k: _squeezed(v, limit, items) for k, v in obj.items()}
    if isinstance(obj, list):
        kept = obj if items is None else obj[:items]
        return [_squeezed(v, limit, items) for v in kept]
    return obj
