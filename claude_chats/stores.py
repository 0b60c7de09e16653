"""The one module that knows both stores: the journal and the canonical Postgres.

``open_searcher(settings)`` gives a ``Searcher`` over the journal, with Postgres
(connected in the background, see ``pgstore.search.PgLink``) when
``database_url`` is set; the embedding provider is built on the first search that
needs it (``open_embedder``). ``open_store(settings)`` gives the ``PgStore`` sync pushes into.
"""

from . import config, scrub
from .localstore.search import LocalSearch
from .models import embedder
from .search.searcher import Searcher

# seconds an MCP search waits for a network embedding provider before answering from full text
# (the CLI waits embed_timeout): a model asking its memory must not wait on a silent server
MODEL_EMBED_DEADLINE = 1.5


def open_searcher(settings=None, journal_path=None, use_postgres=True, wait=1.5, retry_after=5.0,
                  use_journal=True, for_model=False):
    """A ``Searcher`` over the configured stores (``settings``: a ``config.Settings``; None: ``config.load()``).

    ``use_journal=False``: Postgres alone (``chats eval --store postgres``), no fallback.
    ``for_model``: the results go to a model (the MCP server): with ``redact`` on, they are
    redacted whichever store answers (DESIGN.md, Decisions), and a network embedding provider is
    waited on at most ``MODEL_EMBED_DEADLINE`` seconds per search (then full text, with a note).
    """
    settings = settings or config.load()
    local = LocalSearch.open(journal_path) if use_journal else None
    remote = None
    if use_postgres and settings.database_url:
        from .pgstore.search import PgLink   # (psycopg: 50-60 ms of a process that searches the journal alone)

        remote = PgLink(settings.database_url, settings.allow_insecure_remote, wait=wait, retry_after=retry_after)
        remote.start()
    # the configured embedded text: the space sync writes
    return Searcher(local, remote, lambda: open_embedder(settings), redact=bool(settings.redact),
                    redact_results=bool(settings.redact) and for_model,
                    provider_deadline=MODEL_EMBED_DEADLINE if for_model else None)


def open_embedder(settings):
    """The configured embedding provider (``models.embedder``), or ``ProviderUnavailable`` saying which
    credential Claude Code's environment scrub took from this process (see ``scrub``)."""
    scrub.check(settings)
    return embedder(settings)


def open_store(settings):
    """A ``PgStore`` for the configured database, or None when none is configured.

    Raises ``PostgresUnavailable`` / ``InsecureConnectionError`` / ``PostgresError``.
    """
    if not settings.database_url:
        return None
    from .pgstore.store import PgStore

    return PgStore.open(settings.database_url, settings.allow_insecure_remote)
