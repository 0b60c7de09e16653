"""``chats install``, ``uninstall``, ``config``, ``status``, ``doctor``, ``purge``, ``redact``: thin over the library."""

import sys

import click

from .output import emit_json, is_tty


@click.command("install")
@click.option("--print", "dry_run", is_flag=True, help="Show everything that would change; change nothing.")
@click.option("--provider", help="Embedding provider (llama, ollama, bedrock, openai).")
@click.option("--model", help="Embedding model (GGUF path or Ollama name).")
@click.option("--database-url", help="PostgreSQL + pgvector URL (kept in the config file, owner-only).")
@click.option("--schedule", help="Background sync interval: 300, 5m, 1h, or off.")
@click.option("--no-model", is_flag=True, help="Leave the embedding model as it is (see `chats models setup`).")
def install_cmd(dry_run, provider, model, database_url, schedule, no_model):
    """Register the hooks and the MCP server with Claude Code (safe to re-run); with no embedding
    model on this machine, make the small one (`chats models setup`)."""
    from .. import config, install

    values = {"provider": provider, "model": model, "database_url": database_url, "sync_interval": schedule}
    plan = install.plan_install(values)
    _run_plan(plan, dry_run)
    if not no_model:
        model_plan = install.plan_model(config.load(plan.config_values if dry_run else None))
        click.echo("model: " + (model_plan.describe() if dry_run else install.apply_model(model_plan)))


@click.command("uninstall")
@click.option("--print", "dry_run", is_flag=True, help="Show what would be removed; change nothing.")
def uninstall_cmd(dry_run):
    """Remove exactly what `chats install` added (the journal and config stay)."""
    from .. import install

    _run_plan(install.plan_uninstall(), dry_run)


def _run_plan(plan, dry_run):
    from .. import install

    if dry_run:
        click.echo("\n".join(plan.describe()))
        return
    result = install.apply(plan)
    if result.settings_changed:
        where = f" (backup: {result.backup})" if result.backup else ""
        verb = "registered in" if plan.action == "install" else "removed from"
        click.echo(f"hooks {', '.join(install.HOOK_EVENTS)} {verb} {plan.settings_path}{where}")
    else:
        click.echo(f"{plan.settings_path}: already up to date")
    click.echo(f"MCP server {install.MCP_NAME}: {result.mcp}")
    if result.config_path:
        click.echo(f"config written: {result.config_path}")
        _overridden(plan.config_values)
    if plan.action == "install":
        click.echo("next: `chats import` for existing history, `chats sync` to embed it, `chats status` to check, "
                   "`chats doctor` if in doubt")


def _overridden(keys):
    """Warn when the environment hides a value just written to the file."""
    from .. import config

    settings = config.load()
    for key in keys:
        if settings.source(key) != "file":
            click.echo(f"note: {settings.source(key)} overrides the config file's {key}", err=True)


# -- config ----------------------------------------------------------------------------


@click.group("config")
def config_group():
    """Show or change the configuration (one file for the hook, sync and MCP)."""


@config_group.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def config_show(as_json):
    """Every setting's effective value and where it came from (env, file, default)."""
    from .. import config, paths

    rows = config.describe(config.load())
    if as_json:
        emit_json({"path": paths.config_path(), "settings": rows})
        return
    click.echo(f"config file: {paths.config_path()}")
    for row in rows:
        value = "(unset)" if row["value"] is None else row["value"]
        click.echo(f"  {row['key']:<22} {str(value):<40} {row['source']}")


@config_group.command("set")
@click.argument("key")
@click.argument("value")
def config_set(key, value):
    """Set KEY to VALUE in the config file."""
    from .. import config

    path = config.write_values({key: value})
    click.echo(f"{key} = {config.shown(key, config.read_file(path)[key])} written to {path}")
    _overridden([key])
    if key == "journal_redact" and config.read_file(path)[key]:
        click.echo("new messages are stored redacted; `chats redact --journal` rewrites those already stored")


@config_group.command("unset")
@click.argument("key")
def config_unset(key):
    """Remove KEY from the config file (back to the environment or the default)."""
    from .. import config

    click.echo(f"{key} removed from {config.unset(key)}")


# -- status ----------------------------------------------------------------------------


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.option("--offline", is_flag=True, help="Skip the Postgres and embedding-model checks.")
def status_cmd(as_json, offline):
    """Journal, hook, sync, vectors, Postgres and the embedding model at a glance."""
    from .. import status

    report = status.collect(check_postgres=not offline, check_provider=not offline)
    if as_json:
        emit_json(report)
    else:
        click.echo("\n".join(status.render(report)))


# -- doctor ----------------------------------------------------------------------------


@click.command("doctor")
@click.option("--full", is_flag=True, help="Also SQLite's integrity_check and FTS5's integrity-check of the whole "
              "journal (reads every page: a minute or more at a year of history).")
@click.option("--rebuild-fts", is_flag=True, help="First make the journal's full-text index again from its "
              "messages (what the fts check's fix says; a minute or more at a year of history).")
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
def doctor_cmd(full, rebuild_fts, as_json):
    """Check every part (hooks, MCP, config, journal, FTS, model, canary, Postgres) and say how to fix it."""
    from .. import doctor

    if rebuild_fts:
        click.echo("rebuilding the full-text index from the messages ...", err=True)
        click.echo(f"full-text index rebuilt in {doctor.rebuild_fts():.1f} s", err=True)
    progress = (lambda line: click.echo(line, err=True)) if sys.stderr.isatty() else None
    results = doctor.run(full=full, progress=progress)
    skipped = doctor.skipped_full(results)
    if as_json:
        emit_json([r.as_dict() for r in results])
    else:
        for r in results:
            click.echo(f"{r.status.upper():<5} {r.name:<12} {r.detail}")
            if r.fix and r.status in (doctor.FAIL, doctor.WARN):
                click.echo(f"{'':<18} fix: {r.fix}")
        if skipped:
            click.echo(skipped)
    if any(r.failed for r in results):
        raise SystemExit(1)


# -- purge -----------------------------------------------------------------------------


@click.command("purge")
@click.option("--session", "session_id", metavar="ID", help="A session (its subagents go with it).")
@click.option("--project", metavar="PATH", help="A project folder and every folder below it.")
@click.option("--apply-remote", is_flag=True,
              help="Apply the tombstones from other machines that `chats sync` kept aside (too many sessions).")
@click.option("--dry-run", is_flag=True, help="Show what would be removed; remove nothing.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def purge_cmd(session_id, project, apply_remote, dry_run, yes, as_json):
    """Remove conversations from the journal, its vectors and Postgres (queued when unreachable)."""
    from .. import purge

    if apply_remote:
        if session_id or project:
            raise click.UsageError("--apply-remote takes no --session or --project")
        _apply_remote(purge, dry_run, yes, as_json)
        return
    target = purge.Target.of(session_id, project)
    preview = purge.purge(target, dry_run=True)
    if not preview.local["messages"] and preview.postgres == "not configured":
        click.echo(f"nothing stored for {preview.target}")
        return
    if dry_run or not as_json:
        _show_purge(preview, as_json)
    if dry_run:
        return
    if not yes:
        click.confirm("Purge this for good (there is no undo)?", abort=True)
    _show_purge(purge.purge(target), as_json)


def _apply_remote(purge, dry_run, yes, as_json):
    preview = purge.apply_remote(dry_run=True)
    if not preview["tombstones"] or dry_run or not as_json:
        _show_remote(preview, as_json)
    if not preview["tombstones"] or dry_run:
        return
    if not yes:
        click.confirm("Apply these tombstones from other machines for good (there is no undo)?", abort=True)
    _show_remote(purge.apply_remote(), as_json)


def _show_remote(report, as_json):
    if as_json:
        emit_json(report)
        return
    if not report["tombstones"]:
        click.echo("no tombstones from other machines are waiting")
        return
    head = "would remove" if report["dry_run"] else "removed"
    for t in report["tombstones"]:
        click.echo(f"tombstone {t['kind']} {t['target']} (from {t['machine']}): {head} {t['sessions']} sessions, "
                   f"{t['messages']} messages")
    click.echo(f"{len(report['tombstones'])} tombstones: {head} {report['sessions']} sessions, "
               f"{report['messages']} messages from the journal")
    if not report["dry_run"]:
        click.echo(f"postgres: {report['postgres']}")


def _show_purge(report, as_json):
    if as_json:
        emit_json(report.as_dict())
        return
    local = report.local
    head = "would remove" if report.dry_run else "removed"
    click.echo(f"{report.target}: {head} {local['sessions']} sessions, {local['messages']} messages, "
               f"{local['vectors']} vectors from the journal")
    pg = report.postgres_counts
    detail = f": {pg['conversations']} conversations, {pg['messages']} messages" if pg else ""
    why = f" ({report.postgres_error})" if report.postgres_error else ""
    click.echo(f"postgres: {report.postgres}{detail}{why}")
    if report.postgres in ("queued", "would queue"):
        click.echo("  the next `chats sync` that reaches Postgres applies it, and every machine's sync after that")
    scrub = report.postgres_scrub
    if scrub.get("done"):
        click.echo("  the deleted rows' bytes removed from Postgres' files: " + "; ".join(scrub["done"]))
    for left in scrub.get("left", []):
        click.echo(f"  left in Postgres: {left}")
    if not report.dry_run and local["transcripts"]:
        click.echo("Claude Code's own transcript files were not touched (delete them to forget everywhere):")
        for path in local["transcripts"]:
            click.echo(f"  {path}")


# -- redact ----------------------------------------------------------------------------


@click.command("redact")
@click.option("--journal", "journal_", is_flag=True,
              help="Rewrite the text already stored in the journal with secrets redacted (no undo).")
@click.option("--postgres", is_flag=True,
              help="Rewrite the transcript lines Postgres keeps for restore that earlier versions pushed with "
                   "secrets named by their JSON keys (no undo).")
@click.option("--dry-run", is_flag=True, help="With --journal or --postgres: count what would change; change nothing.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def redact_cmd(journal_, postgres, dry_run, yes, as_json):
    """Redact secrets: standard input to standard output, the journal in place (--journal), or
    the kept transcript lines in Postgres (--postgres)."""
    from .. import redact

    if journal_ and postgres:
        raise click.UsageError("--journal and --postgres are two runs: give one of them")
    if postgres:
        _redact_postgres(dry_run, yes, as_json)
        return
    if not journal_:
        text = sys.stdin.read()
        click.echo(redact.redact(text), nl=False)
        return
    from ..localstore.erase import redact_stored
    from ..localstore.journal import Journal

    with Journal.open() as journal:
        preview = redact_stored(journal.conn, redact.redact, dry_run=True)
        if dry_run or not (preview["messages"] or preview["sessions"] or preview["lines"]):
            _show_redacted(preview, as_json, "would rewrite" if dry_run else "nothing to rewrite:")
            return
        if not yes:
            click.confirm(f"Rewrite {preview['messages']} messages, {preview['sessions']} sessions and "
                          f"{preview['lines']} kept transcript lines with their secrets redacted (there is no undo)?",
                          abort=True)
        _show_redacted(redact_stored(journal.conn, redact.redact), as_json, "rewrote")


def _redact_postgres(dry_run, yes, as_json):
    from .. import config, pgredact
    from ..errors import PostgresUnavailable
    from ..pgstore.url import mask

    settings = config.load()
    if not settings.database_url:
        raise PostgresUnavailable("Postgres is not configured: set DATABASE_URL (or database_url in the config file)")
    if not (dry_run or yes):
        click.confirm(f"Read every kept transcript line in Postgres ({mask(settings.database_url)}) and rewrite "
                      "those holding secrets, redacted (there is no undo)?", abort=True)
    if is_tty() and not as_json:
        report = _with_progress("reading kept lines", lambda **kw: pgredact.redact_postgres(settings, dry_run, **kw))
    else:
        report = pgredact.redact_postgres(settings, dry_run)
    if as_json:
        emit_json(report)
        return
    verb = "would rewrite" if dry_run else "rewrote"
    click.echo(f"postgres: read {report['read']} kept transcript lines, {verb} {report['rewritten']}"
               + (f", {report['linked']} kept as links only (not readable as JSON)" if report["linked"] else "")
               + (f"; {report['unreadable']} not readable (not zlib, or too long), left as they are"
                  if report["unreadable"] else ""))
    if report["placeholders"]:
        click.echo("  values redacted: " + ", ".join(f"{n} {kind}" for kind, n in report["placeholders"].items()))
    scrub = report["scrub"]
    if scrub["done"]:
        click.echo("  the old lines' bytes removed from Postgres' files: " + "; ".join(scrub["done"]))
    for left in scrub["left"]:
        click.echo(f"  left in Postgres: {left}")
    if report["rewritten"] or report["linked"]:
        click.echo("  Postgres backups and dumps made before keep the old lines; so do other machines' journals "
                   "(`chats redact --journal` there)")


def _with_progress(label, run):
    """``run(on_start=..., on_batch=...)`` under a progress bar on the terminal (rows read of about how many)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), transient=True) as bar:
        task = bar.add_task(label, total=None)
        return run(on_start=lambda total: bar.update(task, total=total or None),
                   on_batch=lambda done: bar.update(task, completed=done))


def _show_redacted(counts, as_json, head):
    if as_json:
        emit_json(counts)
        return
    click.echo(f"{head} {counts['messages']} messages, {counts['sessions']} sessions, "
               f"{counts['lines']} kept transcript lines")
    if counts["vectors"]:
        click.echo(f"dropped {counts['vectors']} vectors of the old text; the next `chats sync` embeds the "
                   "redacted text (Postgres keeps its copy, pushed redacted unless `redact` is off)")


def register(group):
    for command in (install_cmd, uninstall_cmd, config_group, status_cmd, doctor_cmd, purge_cmd, redact_cmd):
        group.add_command(command)
