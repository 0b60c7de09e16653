"""``chats import``, ``chats search``, ``chats show``, ``chats sessions``: the local journal."""

import os
import time

import click

from .. import paths
from .output import Batched, emit_json, is_tty, one_line, printable

SEQ_MAX = 2**63 - 1   # SQLite integers are 64-bit


def _journal():
    from ..localstore.journal import Journal
    return Journal.open()


@click.command("import")
@click.argument("sources", nargs=-1, type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def import_cmd(sources, as_json):
    """Import Claude Code transcripts into the local journal.

    SOURCES are .jsonl files or folders (default: ~/.claude/projects, or
    $CLAUDE_CONFIG_DIR/projects). Safe to re-run: each file resumes where it
    stopped and nothing is stored twice.
    """
    from .. import config
    from ..localstore.journal import discover

    settings = config.load(validate=False)
    redact = config.journal_redactor(settings)   # the journal_redact setting: store redacted text
    exclude = config.project_filter(settings)    # exclude_projects: never stored
    roots = sources or [paths.claude_projects_dir()]
    if not sources and not os.path.isdir(roots[0]):
        raise click.ClickException(f"no transcripts folder at {roots[0]} (pass a folder or file to import)")
    files = discover(roots)
    started = time.perf_counter()
    with _journal() as journal:
        if is_tty() and not as_json:
            stats = _import_with_progress(journal, files, redact, exclude)
        else:
            stats = journal.import_files(files, redact=redact, exclude=exclude)
    summary = stats.as_dict()
    summary["seconds"] = round(time.perf_counter() - started, 3)
    summary["mb_per_second"] = round(summary["bytes"] / 1e6 / max(summary["seconds"], 1e-9), 1)
    if as_json:
        emit_json(summary)
        return
    click.echo(f"{len(files)} files, {summary['bytes'] / 1e6:.1f} MB read in {summary['seconds']:.1f} s "
               f"({summary['mb_per_second']} MB/s): {summary['messages']} new messages "
               f"in {summary['sessions']} sessions; {summary['duplicates']} already stored; "
               f"{summary['skipped']} lines skipped; {len(summary['errors'])} errors")
    for reason, count in summary["skipped_by_reason"].items():
        click.echo(f"  skipped {count:6d}  {reason}")
    for error in summary["errors"]:
        click.echo(f"  error: {error}", err=True)


def _import_with_progress(journal, files, redact, exclude):
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

    sizes = {f: _size(f) for f in files}
    columns = (TextColumn("importing"), BarColumn(), TransferSpeedColumn(), TimeRemainingColumn())
    with Progress(*columns, transient=True) as progress:
        task = progress.add_task("import", total=sum(sizes.values()))
        return journal.import_files(files, on_file=lambda f: progress.advance(task, sizes[f]), redact=redact,
                                    exclude=exclude)


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


ORIGIN_OPTION = click.option(
    "--origin", type=click.Choice(["human", "machine", "any"]), default="human", show_default=True,
    help="human: sessions a person started; machine: those scripts and SDK runs started (claude -p, the Agent "
         "SDK, CLAUDE_CHATS_MACHINE_MADE=1); any: both.")


@click.command("search")
@click.argument("query")
@click.option("--mode", type=click.Choice(["hybrid", "semantic", "fulltext"]), default="hybrid", show_default=True,
              help="hybrid: words and meaning; semantic: meaning (write a sentence); fulltext: exact words.")
@click.option("--limit", "-n", default=10, show_default=True, type=click.IntRange(1, 100))
@click.option("--project", help="Only sessions in this project folder (or below it).")
@click.option("--session", "session_id", help="Only this session.")
@click.option("--role", type=click.Choice(["user", "assistant", "system"]))
@click.option("--since", help="ISO date or date-time, inclusive.")
@click.option("--until", help="ISO date or date-time (a date covers its whole day).")
@click.option("--no-subagents", is_flag=True, help="Leave out subagent conversations.")
@click.option("--kind", "kinds", multiple=True, help="Message kinds to search (default: text, tool_use, "
              "tool_result, compact_summary).")
@click.option("--per-session", default=2, show_default=True, type=click.IntRange(0), help="0: no cap.")
@ORIGIN_OPTION
@click.option("--local", is_flag=True, help="Search the local journal only, not Postgres.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (the MCP tool's shape).")
def search_cmd(query, mode, limit, project, session_id, role, since, until, no_subagents, kinds, per_session,
               origin, local, as_json):
    """Search the conversations: Postgres when configured, else (or when unreachable) the local journal."""
    from ..stores import open_searcher

    searcher = open_searcher(use_postgres=not local, wait=3.0)
    try:
        result = searcher.search(query, limit=limit, mode=mode, project_path=project, session_id=session_id,
                                 role=role, since=since, until=until, include_subagents=not no_subagents,
                                 kinds=kinds or None, per_session=per_session, max_chars=None, origin=origin)
    finally:
        searcher.close()
    if as_json:
        emit_json(result)
        return
    from ..claudecode import resume_line, shown

    for note in result["notes"]:
        click.echo(f"note: {printable(note)}", err=True)
    for hit in result["hits"]:
        title = one_line(hit["session_name"] or hit["project_path"] or "", 120)
        click.echo(f"{shown(hit['session_id'])} #{hit['seq']}  {hit['role']}/{hit['kind']}  "
                   f"{shown(hit['timestamp'] or '')}  {title}  [{hit['source']} {hit['score']:.4f}]")
        click.echo(f"    {one_line(hit['text'], 200)}")
        for ctx in hit["context"]:
            click.echo(f"      #{ctx['seq']} {ctx['role']}: {one_line(ctx['text'], 120)}")
        click.echo(f"    resume: {resume_line(hit['session_id'], hit['project_path'])}")


@click.command("show")
@click.argument("session_id")
@click.option("--start", type=click.IntRange(0, SEQ_MAX), help="First sequence number.")
@click.option("--end", type=click.IntRange(0, SEQ_MAX), help="Last sequence number.")
@click.option("--json", "as_json", is_flag=True)
def show_cmd(session_id, start, end, as_json):
    """Print a stored conversation."""
    with _journal() as journal:
        session = journal.session(session_id)
        messages = journal.messages(session_id, start, end)
    if as_json:
        emit_json({"session": session, "messages": messages})
        return
    from ..claudecode import shown

    click.echo(f"{shown(session['session_id'])}  {shown(session['name'] or '')}")
    click.echo(f"project {shown(session['project_path'], 500)}  branch {shown(session['git_branch'])}  "
               f"{shown(session['first_at'])} .. {shown(session['last_at'])}  {session['message_count']} messages")
    with Batched() as out:
        for m in messages:
            out.line(f"\n--- #{m['seq']} {m['role']}/{m['kind']} {shown(m['created_at'] or '')}")
            out.line(printable(m["content"]))


NAME_WIDTH = 50   # at most, in `chats sessions`; as wide as the longest name shown, none when none has one
PATH_WIDTH = 1000   # a project path longer than this is cut (saying how long it was)


@click.command("sessions")
@click.option("--limit", "-n", default=20, show_default=True, type=click.IntRange(1, 100000))
@click.option("--project", help="Only sessions in this project folder (or below it).")
@click.option("--subagents", is_flag=True, help="Also list subagent conversations (<session>:agent-<id>).")
@ORIGIN_OPTION
@click.option("--json", "as_json", is_flag=True)
def sessions_cmd(limit, project, subagents, origin, as_json):
    """List recent sessions, newest first, each with the line that resumes it in Claude Code."""
    with _journal() as journal:
        rows = journal.sessions(limit=limit, project=project, include_subagents=subagents, origin=origin)
    if as_json:
        emit_json(rows)
        return
    from ..claudecode import resume_line, shown

    if not rows:
        click.echo("no sessions (run `chats import`)")
    names = [shown(one_line(s["name"] or "", NAME_WIDTH)) for s in rows]   # no terminal escapes from a row
    width = max(map(len, names), default=0)
    for s, name in zip(rows, names):
        click.echo(f"{shown(s['session_id'])}  {shown(s['last_at'] or ''):24}  {s['message_count']:5d} msgs  "
                   + (f"{name:{width}}  " if width else "") + shown(s["project_path"] or "", PATH_WIDTH))
        click.echo(f"    {resume_line(s['session_id'], s['project_path'])}")


@click.command("restore")
@click.argument("session_id")
@click.option("--to", "to", metavar="PATH", help="The project folder to restore it for (default: where it was "
              "recorded), e.g. where the project is checked out on this machine.")
@click.option("--dry-run", is_flag=True, help="Say what would be written; write nothing.")
@click.option("--force", is_flag=True, help="Replace a different transcript already there (kept as .bak-<time>).")
@click.option("--json", "as_json", is_flag=True)
def restore_cmd(session_id, to, dry_run, force, as_json):
    """Write a session back as the Claude Code transcript `claude --resume` reads.

    For a session Claude Code has deleted (cleanupPeriodDays), or one recorded on another machine
    that syncs to the same Postgres. Its subagents' transcripts come back beside it.
    """
    from ..restore import restore

    report = restore(session_id, to=to, dry_run=dry_run, force=force)
    if as_json:
        emit_json(report.as_dict())
        return
    verbs = {"written": "wrote", "replaced": "replaced", "unchanged": "already there, unchanged:",
             "would write": "would write", "differs": "differs, would need --force:"}
    for f in report.files:
        backup = f" (the old file kept as {f.backup})" if f.backup else ""
        click.echo(f"{verbs[f.status]} {f.path} ({f.lines} lines from the {report.source}){backup}")
    for skipped in report.skipped:
        click.echo(f"skipped {skipped['conversation']}: {skipped['reason']}")
    click.echo(f"{'then resume' if dry_run else 'resume'} it with:\n  {report.resume}")


def register(group):
    for command in (import_cmd, search_cmd, show_cmd, sessions_cmd, restore_cmd):
        group.add_command(command)
