"""The routes of ``chats ui`` (docs/commands.md; its doors: RELIABILITY.md, "The viewer"): search, a conversation, sessions, status, export.

``create_app(searcher, token=..., hosts=...)`` gives the ASGI app behind ``guard.Guard``. Every page
reads through the ``Searcher`` the CLI and the MCP server use (Postgres when it answers, else the
journal, with the same notes), with results redacted as the MCP tools' are (``redact_results``).
The routes are plain (sync) functions: Starlette runs them on its thread pool, and the searcher's
lock keeps one store call at a time.
"""

import contextlib
import re
import time
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .. import transcript
from ..claudecode import resume_line
from ..errors import ClaudeChatsError, PostgresUnavailable, SearchError, SessionNotFound
from ..search.core import ORIGINS, query_terms
from ..search.searcher import MODES
from . import activity, export, guard, live, render

PAGE = 200            # messages a session page (and each "more" of it) shows
BEFORE_TARGET = 20    # messages shown above the one a search hit opens at
SESSIONS_PAGE = 100   # sessions a sessions page lists
MESSAGE_CHARS = live.MESSAGE_CHARS   # a message longer than this is cut in the page (the export has it whole)
ROLES = ("user", "assistant", "system")
HIT_LIMIT = 20
ALL_KINDS = transcript.KINDS


def create_app(searcher, token, hosts, journal_path=None, watch=True, status=None):
    """The app: ``searcher`` (``Searcher``), the launch ``token``, the ``hosts`` its Host header may name;
    ``journal_path``: the journal the live updates watch; ``status``: a function giving ``chats status``'s
    dict (default ``status.collect``)."""
    env = Environment(loader=PackageLoader("claude_chats.ui", "templates"), autoescape=select_autoescape(default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.globals.update(csrf=guard.csrf_value(token), quote=quote, modes=MODES, origins=ORIGINS, roles=ROLES,
                       kinds=transcript.DEFAULT_KINDS + (transcript.THINKING,))
    env.filters.update(when=_when, marked=_marked, count=_count)
    watcher = live.Watcher(journal_path) if watch else None

    def page(name, request, status_code=200, headers=None, **values):
        body = env.get_template(name).render(request=request, **values)
        return HTMLResponse(body, status_code=status_code, headers=headers)

    def home(request):
        return RedirectResponse("/search", status_code=303)

    def search(request):
        form = _search_form(request.query_params)
        result, error, took = None, None, 0.0
        if form["q"]:
            started = time.perf_counter()
            try:
                result = searcher.search(form["q"], **_search_options(form))
            except (SearchError, PostgresUnavailable) as exc:
                error = str(exc)
            except ClaudeChatsError as exc:
                error = f"the search failed: {exc}"
            took = (time.perf_counter() - started) * 1e3
        values = dict(form=form, result=result, error=error, terms=query_terms(form["q"]) if form["q"] else [],
                      took=took)
        timing = {"Server-Timing": f"search;dur={took:.1f}"}
        if request.query_params.get("fragment") == "1":
            return page("_results.html", request, headers=timing, **values)
        return page("search.html", request, headers=timing, **values)

    def session(request):
        session_id = request.path_params["session_id"]
        at = _int(request.query_params.get("at"))
        start = _int(request.query_params.get("start"))
        if start is None:
            start = max(0, at - min(BEFORE_TARGET, PAGE // 4)) if at is not None else 0
        try:
            conversation, subagents, links = _messages(searcher, session_id, start)
        except SessionNotFound as exc:
            return page("error.html", request, status_code=404, title="Not found", message=str(exc))
        info = conversation["session"]
        parent = render.parent_link(searcher, info) if info.get("is_subagent") else None
        return page("session.html", request, info=info, conversation=conversation, links=links, target=at,
                    subagents=subagents, parent=parent, start=start, resume=_resume(info),
                    rendered=[render.message(m, links.get(m["seq"]), m["seq"] == at)
                              for m in conversation["messages"]])

    def more(request):
        session_id = request.path_params["session_id"]
        after = _int(request.query_params.get("after"))
        try:
            conversation, _, links = _messages(searcher, session_id, 0 if after is None else after + 1)
        except SessionNotFound as exc:
            return PlainTextResponse(str(exc), status_code=404)
        return page("_messages.html", request, conversation=conversation,
                    rendered=[render.message(m, links.get(m["seq"])) for m in conversation["messages"]],
                    info=conversation["session"])

    def sessions(request):
        project = (request.query_params.get("project") or "").strip() or None
        origin = _choice(request.query_params.get("origin"), ORIGINS, "human")
        shown = min(max(_int(request.query_params.get("limit")) or SESSIONS_PAGE, 1), 5000)
        try:
            listing = searcher.recent_sessions(limit=shown + 1, project_path=project, origin=origin, max_chars=None)
        except PostgresUnavailable as exc:
            return page("error.html", request, status_code=503, title="No store", message=str(exc))
        rows = listing["sessions"][:shown]
        strip = activity.svg(searcher, project, origin)
        for row in rows:
            row["resume"] = _resume(row)
            # resume_line puts `chats restore` first when Claude Code no longer has the transcript
            row["restorable"] = bool(row["resume"]) and row["resume"].startswith("chats restore ")
        return page("sessions.html", request, listing=listing, rows=rows, more=len(listing["sessions"]) > shown,
                    project=project or "", origin=origin, limit=shown, strip=strip,
                    more_link="/sessions?" + urlencode({k: v for k, v in (("project", project or ""),
                                                       ("origin", origin), ("limit", shown * 2)) if v}))

    def activity_svg(request):
        project = (request.query_params.get("project") or "").strip() or None
        origin = _choice(request.query_params.get("origin"), ORIGINS, "human")
        try:
            svg = activity.svg(searcher, project, origin)
        except PostgresUnavailable as exc:
            return PlainTextResponse(str(exc), status_code=503)
        return Response(str(svg), media_type="image/svg+xml")

    async def restore_session(request):
        form = await request.form()
        session_id = request.path_params["session_id"]
        if not guard.check_csrf(request, form.get("csrf")):
            return PlainTextResponse("403 Forbidden: the form's CSRF value is missing or wrong (reload the page)",
                                     status_code=403)
        to = (form.get("to") or "").strip() or None
        force = form.get("force") == "1"
        return await run_in_threadpool(_restore, session_id, to, force, request)

    def _restore(session_id, to, force, request):
        from ..localstore.journal import Journal
        from ..restore import restore

        try:
            with Journal.open(journal_path) as journal:   # the journal the pages read (None: the default)
                report = restore(session_id, to=to, force=force, journal=journal)
        except ClaudeChatsError as exc:
            return page("restore.html", request, status_code=409, session_id=session_id, error=str(exc), report=None)
        return page("restore.html", request, session_id=session_id, error=None, report=report.as_dict())

    def status_page(request):
        from .. import status as status_module

        report = (status or (lambda: status_module.collect(check_provider=False)))()
        return page("status.html", request, report=report, sections=_status_sections(report))

    def export_session(request):
        session_id, kind = request.path_params["session_id"], request.path_params["kind"]
        try:
            info, messages = export.read(searcher, session_id, kinds=ALL_KINDS)   # thinking too, as on the page
        except SessionNotFound as exc:
            return PlainTextResponse(str(exc), status_code=404)
        name = _file_name(session_id)
        if kind == "md":
            return Response(export.markdown(info, messages), media_type="text/markdown; charset=utf-8",
                            headers={"Content-Disposition": f'attachment; filename="{name}.md"'})
        return Response(export.html(info, messages), media_type="text/html; charset=utf-8",
                        headers={"Content-Disposition": f'attachment; filename="{name}.html"'})

    async def events(request):
        if watcher is None:
            return PlainTextResponse("live updates are off", status_code=404)
        session_id = request.query_params.get("session") or ""
        after = _int(request.query_params.get("after"))
        return await live.stream(request, watcher, searcher, session_id, -1 if after is None else after,
                                 lambda rows: env.get_template("_messages.html").render(
                                     conversation={"messages": rows, "next_start_seq": None},
                                     rendered=[render.message(m) for m in rows], live=True))

    def favicon(request):
        return Response(status_code=204)

    routes = [
        Route("/", home), Route("/favicon.ico", favicon), Route("/search", search), Route("/sessions", sessions),
        Route("/activity.svg", activity_svg), Route("/status", status_page), Route("/events", events),
        Route("/session/{session_id:str}/more", more),
        Route("/session/{session_id:str}/restore", restore_session, methods=["POST"]),
        Route("/session/{session_id:str}/export.{kind:str}", export_session),
        Route("/session/{session_id:str}", session),
        Mount("/static", StaticFiles(packages=[("claude_chats.ui", "static")]), name="static"),
    ]
    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        if watcher is not None:
            watcher.close()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.watcher = watcher
    return guard.Guard(app, token, hosts)


# -- reading ---------------------------------------------------------------------------------


def _messages(searcher, session_id, start):
    """(a page of the conversation from seq ``start``, its subagents, {call seq: subagent id} of the page)."""
    conversation = searcher.conversation(session_id, start_seq=start, limit=PAGE, kinds=ALL_KINDS, max_chars=None,
                                         message_chars=MESSAGE_CHARS)
    subagents = searcher.subagents(session_id)
    return conversation, subagents, render.subagent_links(conversation["messages"], subagents, searcher)


# -- forms -----------------------------------------------------------------------------------


def _search_form(params):
    kinds = [k for k in params.getlist("kind") if k in transcript.KINDS]
    return {"q": (params.get("q") or "").strip(), "mode": _choice(params.get("mode"), MODES, "hybrid"),
            "project": (params.get("project") or "").strip(), "since": (params.get("since") or "").strip(),
            "until": (params.get("until") or "").strip(), "role": _choice(params.get("role"), ROLES, ""),
            "kinds": kinds, "origin": _choice(params.get("origin"), ORIGINS, "human"),
            "subagents": params.get("subagents", "1") != "0", "session": (params.get("session") or "").strip(),
            "limit": min(max(_int(params.get("limit")) or HIT_LIMIT, 1), 100)}


def _search_options(form):
    return dict(limit=form["limit"], mode=form["mode"], project_path=form["project"] or None,
                session_id=form["session"] or None, role=form["role"] or None, since=form["since"] or None,
                until=form["until"] or None, include_subagents=form["subagents"], kinds=form["kinds"] or None,
                origin=form["origin"], max_chars=None, context=1)


def _choice(value, allowed, default):
    return value if value in allowed else default


def _int(value):
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if 0 <= number < 2**62 else None


def _resume(row):
    try:
        return resume_line(row["session_id"].split(":agent-")[0], row.get("project_path"))
    except Exception:   # an id or path resume_line will not quote: no line, rather than a broken page
        return None


def _file_name(session_id):
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in session_id)[:120] or "session"


# -- filters ---------------------------------------------------------------------------------


def _when(value):
    """An ISO time as the pages show it: date and minutes, UTC."""
    if not value:
        return ""
    text = str(value)
    return text[:16].replace("T", " ")


def _count(number):
    return f"{int(number or 0):,}"


def _marked(text, terms):
    """``text`` escaped, each word starting with a query word's stem in ``<mark>``."""
    text = text or ""
    stems = sorted({t.lower()[:max(3, len(t) - 2)] for t in terms if t}, key=len, reverse=True)[:20]
    if not stems:
        return escape(text)
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(s) for s in stems) + r")\w*", re.IGNORECASE)
    out, last = [], 0
    for found in pattern.finditer(text):
        out.append(escape(text[last:found.start()]))
        out.append(Markup("<mark>") + escape(found.group(0)) + Markup("</mark>"))
        last = found.end()
    out.append(escape(text[last:]))
    return Markup("").join(out)


def _status_sections(report):
    """(section, [lines]) of the status page: the lines ``chats status`` prints."""
    from .. import status as status_module

    return status_module.sections(report)
