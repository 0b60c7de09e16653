"""The ``conversation-memory`` MCP server: search, read and list past Claude Code conversations.

``create_server(open_searcher=None)`` builds the FastMCP server. Its lifespan
opens the stores once (``stores.open_searcher``: the journal, and Postgres in
the background when configured) and every tool call goes through that one
``Searcher``, which answers from the journal whenever Postgres is out of reach
and goes back to Postgres when it returns. Library errors become
``ToolError``s with the library's actionable message.
"""

from typing import Annotated, Literal

from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.lifespan import lifespan
from mcp.types import ToolAnnotations
from pydantic import Field

from .. import transcript
from ..search.core import MAX_CHARS
from . import current, direct, stdin
from .opening import Opening, open_stores

NAME = "conversation-memory"

INSTRUCTIONS = """Memory of past Claude Code conversations (every turn, recorded before compaction).
Use search_memory to find what was said or done before (decisions, errors and their fixes, commands,
file names), get_conversation to read around a hit, list_recent_sessions to see what was worked on
lately. Reach for it after a compaction, when the summary lacks a detail, and when the person refers
to earlier work. Results say which store answered ("postgres" or "local", the offline journal)."""

WHEN = """When to use it:
- after this conversation was compacted, when the summary lacks a detail: an exact error message,
  a constraint, the reason for a decision, what was tried first (session_id="current" searches
  this conversation);
- when the person refers to earlier work ("like last time", "the bug we fixed", "what did we decide
  about X", "the script from yesterday", "again") or asks what was done before;
- before redoing something that may already have been solved in another session.
project_path="current" keeps to this project."""

SEARCH_DESCRIPTION = f"""Search the record of past Claude Code conversations: every turn is kept, including
what a compaction dropped from this conversation's context.

{WHEN}

Modes:
- "hybrid" (default): keywords and meaning together; best first choice.
- "semantic": meaning only. Phrase the query as a sentence that would appear in the conversation
  (e.g. "the migration test fails because the sequence is not reset"), not as keywords.
- "fulltext": exact words; best for names, error messages, file paths, commands. Supports
  "quoted phrases", `or`, and -excluded words.

Each hit has the session id, its name, project, branch, role, kind, sequence number (seq), time,
the matched text and neighbouring messages. Read more of a hit's conversation with
get_conversation(session_id, start_seq=seq-5, end_seq=seq+5).

When nothing is found: try other words or the other mode, drop filters, or list_recent_sessions.
`notes` says when a store or a leg was skipped and why (e.g. Postgres unreachable: answered from
the local journal; no vectors yet: full text only)."""

CONVERSATION_DESCRIPTION = """Read a stored conversation in order, a page at a time.

Use it to get back what a compaction dropped (session_id="current" is this conversation; the note
shown after a compaction gives the seq range to read), or to read around a search_memory hit.

Returns the session (name, project, branch, times, message_count) and its messages with
seq, role, kind, time and text (long messages shortened). When `next_start_seq` is set,
call again with start_seq=next_start_seq for the next page. To read around a search hit,
pass start_seq=seq-5, end_seq=seq+5."""

RECENT_DESCRIPTION = """The most recent conversations, newest first: session id, name, project, branch,
started_at, last_at (last message), message_count, machine. Use it when the person asks what was
worked on lately or names an earlier session. Use a session id with get_conversation, or as
search_memory's session_id filter."""

# What Claude Code 2.1.332 reads in a tool's _meta (docs/claude-code-internals.md): alwaysLoad keeps the
# tool's schema in every request instead of deferring it behind ToolSearch (three small tools);
# searchHint is matched by ToolSearch's keyword search.
TOOL_META = {"anthropic/alwaysLoad": True,
             "anthropic/searchHint": "memory of past conversations, earlier sessions, history, what was said or "
                                     "done before, after a compaction, recall previous work"}
PROJECT_FIELD = 'Only this project folder and its sub-folders (absolute path); "current": this session\'s project.'
DESCRIPTION_CAP = 4096   # characters of a tool description Claude Code keeps in the prompt

# The tools' descriptions are given as ``description=``, never as docstrings of the tool functions:
# FastMCP parses a tool function's docstring with griffe, whose import costs 0.1-0.2 s of start-up.

Kind = Literal[transcript.KINDS]
Origin = Annotated[Literal[direct.ORIGINS], Field(
    description="Which sessions: 'human' (default: started by a person in Claude Code), 'machine' (started by "
                "scripts and SDK runs, e.g. `claude -p`), or 'any'.")]
READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)

MAX_SEQ = 2**63 - 1   # SQLite integers are 64-bit
LIST_MAX_CHARS = 20_000   # list_recent_sessions' default budget


def create_server(open_searcher=None, opening=None):
    """The FastMCP server; ``open_searcher()`` returns the ``Searcher`` (default: from the config);
    ``opening``: an ``Opening`` already under way (the front's), used instead."""

    @lifespan
    async def stores(server):
        searcher = opening or Opening(open_searcher or open_stores)
        try:
            yield {"searcher": searcher}
        finally:
            searcher.close()

    server = FastMCP(NAME, instructions=INSTRUCTIONS, lifespan=stores, mask_error_details=True)

    @server.tool(description=SEARCH_DESCRIPTION, annotations=READ_ONLY, meta=TOOL_META)
    def search_memory(
        query: Annotated[str, Field(description="What to look for (words, or a sentence for semantic).")],
        ctx: Context,
        limit: Annotated[int, Field(ge=direct.LIMITS[0], le=direct.LIMITS[1], description="Number of hits.")] = 5,
        project_path: Annotated[str | None, Field(description=PROJECT_FIELD)] = None,
        mode: Literal[direct.MODES] = "hybrid",
        session_id: Annotated[str | None, Field(
            description='Only this conversation; "current": the one you are in.')] = None,
        role: Annotated[Literal[direct.ROLES] | None, Field(
            description="Only what the person typed (user) or what the assistant wrote (assistant).")] = None,
        since: Annotated[str | None, Field(description="ISO date or date-time, inclusive (2025-01-31).")] = None,
        until: Annotated[str | None, Field(description="ISO date or date-time; a date covers its day.")] = None,
        include_subagents: Annotated[bool, Field(description="Also search subagent conversations.")] = True,
        kinds: Annotated[list[Kind] | None, Field(
            description="Message kinds (default: text, tool_use, tool_result, compact_summary).")] = None,
        max_chars: Annotated[int, Field(ge=direct.MAX_CHARS_LIMITS[0], le=direct.MAX_CHARS_LIMITS[1],
                                        description="Size budget of the whole result.")] = MAX_CHARS,
        origin: Origin = "human",
    ) -> dict:
        return _call(ctx, lambda s: direct.search_memory(
            s, query, limit=limit, project_path=project_path, mode=mode, session_id=session_id, role=role,
            since=since, until=until, include_subagents=include_subagents, kinds=kinds, max_chars=max_chars,
            origin=origin))

    @server.tool(description=CONVERSATION_DESCRIPTION, annotations=READ_ONLY, meta=TOOL_META)
    def get_conversation(
        session_id: Annotated[str, Field(description='A session id from search_memory or list_recent_sessions; '
                                                     '"current": the conversation you are in.')],
        ctx: Context,
        start_seq: Annotated[int | None, Field(ge=0, le=MAX_SEQ, description="First sequence number (default 0).")] = None,
        end_seq: Annotated[int | None, Field(ge=0, le=MAX_SEQ, description="Last sequence number, inclusive.")] = None,
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many messages.")] = 50,
        max_chars: Annotated[int, Field(ge=1000, le=200_000, description="Size budget of the page.")] = 20_000,
    ) -> dict:
        return _call(ctx, lambda s: s.conversation(current.session_id(session_id), start_seq, end_seq, limit=limit,
                                                   max_chars=max_chars))

    @server.tool(description=RECENT_DESCRIPTION, annotations=READ_ONLY, meta=TOOL_META)
    def list_recent_sessions(
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=200, description="Number of sessions.")] = 10,
        project_path: Annotated[str | None, Field(description=PROJECT_FIELD)] = None,
        include_subagents: bool = False,
        origin: Origin = "human",
        max_chars: Annotated[int, Field(ge=1000, le=200_000,
                                        description="Size budget of the whole result.")] = LIST_MAX_CHARS,
    ) -> dict:
        return _call(ctx, lambda s: s.recent_sessions(limit, current.project_path(project_path), include_subagents,
                                                      origin=origin, max_chars=max_chars))

    return server


def _call(ctx, action):
    """Run ``action(searcher)``; claude-chats errors become ToolErrors with their message."""
    meta = getattr(getattr(ctx, "request_context", None), "meta", None) or {}
    if meta.get(stdin.META_KEY):   # lone surrogates the stdio transport could not pass on (see mcp.stdin)
        raise ToolError(f"{', '.join(map(str, meta[stdin.META_KEY]))}: not valid Unicode text (a lone surrogate, "
                        "such as the escape \\ud800); send UTF-8 text")
    try:
        return action(ctx.lifespan_context["searcher"].get())
    except Exception as exc:
        text = direct.error_text(exc)   # a claude-chats error: its message (the front answers the same)
        if text is None:
            raise
        raise ToolError(text) from None
