"""The ``conversation-memory`` MCP server: search, read and list past Claude Code conversations.

``create_server(open_searcher=None)`` builds the FastMCP server. Its lifespan
opens the stores once (``stores.open_searcher``: the journal, and Postgres in
the background when configured) and every tool call goes through that one
``Searcher``, which answers from the journal whenever Postgres is out of reach
and goes back to Postgres when it returns. Library errors become
``ToolError``s with the library's actionable message.
"""

import threading
from typing import Annotated, Literal

from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.lifespan import lifespan
from mcp.types import ToolAnnotations
from pydantic import Field

from .. import transcript
from ..errors import ClaudeChatsError
from ..search import bounds
from ..search.core import MAX_CHARS
from . import stdin

NAME = "conversation-memory"

INSTRUCTIONS = """Memory of past Claude Code conversations (every turn, recorded before compaction).
Use search_memory to find what was said or done before (decisions, errors and their fixes, commands,
file names), get_conversation to read around a hit, list_recent_sessions to see what was worked on
lately. Results say which store answered ("postgres" or "local", the offline journal)."""

SEARCH_DESCRIPTION = """Search past Claude Code conversations.

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

Kind = Literal[transcript.KINDS]
Origin = Annotated[Literal["human", "machine", "any"], Field(
    description="Which sessions: 'human' (default: started by a person in Claude Code), 'machine' (started by "
                "scripts and SDK runs, e.g. `claude -p`), or 'any'.")]
OPEN_GRACE = 1.0   # seconds the stores wait for the first tools/list before they open
CLOSE_WAIT = 1.0   # seconds the shutdown waits for the warm-up to finish
READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)

MAX_SEQ = 2**63 - 1   # SQLite integers are 64-bit
LIST_MAX_CHARS = 20_000   # list_recent_sessions' default budget


def create_server(open_searcher=None):
    """The FastMCP server; ``open_searcher()`` returns the ``Searcher`` (default: from the config)."""

    @lifespan
    async def stores(server):
        searcher = Opening(open_searcher or _open_stores)
        try:
            yield {"searcher": searcher}
        finally:
            searcher.close()

    server = FastMCP(NAME, instructions=INSTRUCTIONS, lifespan=stores, mask_error_details=True)

    @server.tool(description=SEARCH_DESCRIPTION, annotations=READ_ONLY)
    def search_memory(
        query: Annotated[str, Field(description="What to look for (words, or a sentence for semantic).")],
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=50, description="Number of hits.")] = 5,
        project_path: Annotated[str | None, Field(
            description="Only this project folder and its sub-folders (absolute path).")] = None,
        mode: Literal["hybrid", "semantic", "fulltext"] = "hybrid",
        session_id: Annotated[str | None, Field(description="Only this conversation.")] = None,
        role: Annotated[Literal["user", "assistant", "system"] | None, Field(
            description="Only what the person typed (user) or what the assistant wrote (assistant).")] = None,
        since: Annotated[str | None, Field(description="ISO date or date-time, inclusive (2025-01-31).")] = None,
        until: Annotated[str | None, Field(description="ISO date or date-time; a date covers its day.")] = None,
        include_subagents: Annotated[bool, Field(description="Also search subagent conversations.")] = True,
        kinds: Annotated[list[Kind] | None, Field(
            description="Message kinds (default: text, tool_use, tool_result, compact_summary).")] = None,
        max_chars: Annotated[int, Field(ge=1000, le=100_000,
                                        description="Size budget of the whole result.")] = MAX_CHARS,
        origin: Origin = "human",
    ) -> dict:
        return _call(ctx, lambda s: s.search(
            query, limit=limit, mode=mode, project_path=project_path, session_id=session_id, role=role,
            since=since, until=until, include_subagents=include_subagents, kinds=kinds, max_chars=max_chars,
            origin=origin))

    @server.tool(annotations=READ_ONLY)
    def get_conversation(
        session_id: Annotated[str, Field(description="A session id from search_memory or list_recent_sessions.")],
        ctx: Context,
        start_seq: Annotated[int | None, Field(ge=0, le=MAX_SEQ, description="First sequence number (default 0).")] = None,
        end_seq: Annotated[int | None, Field(ge=0, le=MAX_SEQ, description="Last sequence number, inclusive.")] = None,
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many messages.")] = 50,
        max_chars: Annotated[int, Field(ge=1000, le=200_000, description="Size budget of the page.")] = 20_000,
    ) -> dict:
        """Read a stored conversation in order, a page at a time.

        Returns the session (name, project, branch, times, message_count) and its messages with
        seq, role, kind, time and text (long messages shortened). When `next_start_seq` is set,
        call again with start_seq=next_start_seq for the next page. To read around a search hit,
        pass start_seq=seq-5, end_seq=seq+5.
        """
        return _call(ctx, lambda s: s.conversation(session_id, start_seq, end_seq, limit=limit, max_chars=max_chars))

    @server.tool(annotations=READ_ONLY)
    def list_recent_sessions(
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=200, description="Number of sessions.")] = 10,
        project_path: Annotated[str | None, Field(
            description="Only this project folder and its sub-folders (absolute path).")] = None,
        include_subagents: bool = False,
        origin: Origin = "human",
        max_chars: Annotated[int, Field(ge=1000, le=200_000,
                                        description="Size budget of the whole result.")] = LIST_MAX_CHARS,
    ) -> dict:
        """The most recent conversations, newest first: session id, name, project, branch,
        started_at, last_at (last message), message_count, machine. Use a session id with
        get_conversation, or as search_memory's session_id filter."""
        return _call(ctx, lambda s: s.recent_sessions(limit, project_path, include_subagents, origin=origin,
                                                      max_chars=max_chars))

    return server


class Opening:
    """The searcher, opened in a background thread as the server starts: ``tools/list`` does not
    wait for the stores (or their imports), the first tool call does. The same thread then loads
    the embedding model and the vector index, so the first search does not pay for them."""

    def __init__(self, opener, grace=OPEN_GRACE):
        self._searcher = self._error = None
        self._opened, self._wanted = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._open, args=(opener, grace), name="chats-open-stores",
                                        daemon=True)
        self._thread.start()

    def _open(self, opener, grace):
        # Let the main thread answer initialize and tools/list first (imports here would compete with
        # it for the GIL), unless a tool call wants the stores sooner.
        self._wanted.wait(grace)
        try:
            self._searcher = opener()
        except Exception as exc:  # noqa: BLE001 - reported to every tool call
            self._error = exc
        finally:
            self._opened.set()
        if self._searcher is not None:
            try:
                self._searcher.warm()
            except Exception:  # noqa: BLE001 - warming is an optimisation; the search reports errors
                pass

    def get(self):
        self._wanted.set()
        self._opened.wait()
        if self._error is not None:
            if isinstance(self._error, ClaudeChatsError):
                raise self._error
            raise ToolError(f"cannot open the conversation stores: {type(self._error).__name__}: {self._error}")
        return self._searcher

    def close(self):
        self._wanted.set()
        self._opened.wait()
        # the warm-up may still wait on a silent embedding server: do not hold the shutdown for it
        self._thread.join(CLOSE_WAIT)
        if self._searcher is not None:
            self._searcher.close()


def _open_stores():
    # imported here, in the opening thread: the stores' imports (numpy, psycopg, apsw) must not
    # delay the answers to initialize and tools/list
    from ..stores import open_searcher

    return open_searcher(for_model=True)   # what the tools return goes into the model's context: redacted


def _call(ctx, action):
    """Run ``action(searcher)``; claude-chats errors become ToolErrors with their message."""
    meta = getattr(getattr(ctx, "request_context", None), "meta", None) or {}
    if meta.get(stdin.META_KEY):   # lone surrogates the stdio transport could not pass on (see mcp.stdin)
        raise ToolError(f"{', '.join(map(str, meta[stdin.META_KEY]))}: not valid Unicode text (a lone surrogate, "
                        "such as the escape \\ud800); send UTF-8 text")
    try:
        return action(ctx.lifespan_context["searcher"].get())
    except ClaudeChatsError as exc:
        raise ToolError(bounds.cut(str(exc), bounds.ERROR_CHARS)) from None   # an id echoed back stays small
    except UnicodeEncodeError:
        # A JSON escape of a lone surrogate ("\\ud800") cannot be matched against UTF-8 text.
        raise ToolError("an argument is not valid Unicode text (a lone surrogate); send UTF-8 text") from None


def main():
    """Serve over stdio (what ``chats mcp`` runs)."""
    stdin.install()
    create_server().run(transport="stdio", show_banner=False, log_level="WARNING")
