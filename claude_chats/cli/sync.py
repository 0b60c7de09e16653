"""``chats sync`` and ``chats schedule install|remove|show``."""

import click

from .output import emit_json, is_tty


@click.command("sync")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--batch-size", type=click.IntRange(1, 100_000), default=500, show_default=True,
              help="Messages per Postgres transaction.")
def sync_cmd(as_json, batch_size):
    """Embed pending messages and push them to Postgres (one sync at a time).

    Safe to interrupt and re-run: nothing is lost or stored twice. Without a
    configured database the messages are embedded into the local journal only.
    """
    from ..errors import SyncLocked
    from ..sync.runner import run_sync, terminate_as_interrupt

    try:
        with terminate_as_interrupt():
            if is_tty() and not as_json:
                report = _with_progress(run_sync, batch_size)
            else:
                report = run_sync(batch_size=batch_size)
    except SyncLocked as exc:
        if as_json:
            emit_json({"ok": True, "skipped": str(exc)})
        else:
            click.echo(str(exc), err=True)
        return
    summary = report.as_dict()
    if as_json:
        emit_json(summary)
    else:
        _print(summary)
    if not report.ok:
        raise SystemExit(1)


def _with_progress(run_sync, batch_size):
    """The sync under a progress bar (characters embedded of those to embed) with messages and ETA."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("syncing"), BarColumn(), TextColumn("{task.fields[line]}"), TimeElapsedColumn())
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task("sync", total=None, line="counting")

        def show(p):
            total, done = (p.chars_total, p.chars_done) if p.chars_total else (p.messages_total, p.messages_done)
            bar.update(task, completed=done, total=total or None, line=progress_line(p))

        return run_sync(batch_size=batch_size, progress=show)


def progress_line(p):
    """``1,234/2,700 messages, ETA 1 min 20 s`` of a ``SyncProgress``."""
    from ..times import spoken

    if getattr(p, "step", ""):
        return p.step
    eta = p.eta
    left = "" if eta is None else f", ETA {spoken(eta)}"
    return f"{p.messages_done:,}/{p.messages_total:,} messages{left}"


def _print(s):
    if s["postgres"] == "not configured":   # journal only: nothing is waiting for anything but a database
        click.echo(f"embedded {s['embedded']} messages ({s['chunks']} chunks) in {s['seconds']:.1f} s; journal "
                   f"only: {s['pending_after']} messages to push once Postgres is configured")
    else:
        click.echo(f"{s['pending_before']} pending: embedded {s['embedded']} messages ({s['chunks']} chunks), "
                   f"pushed {s['pushed']} messages and {s['vectors_pushed']} vectors in {s['batches']} batches, "
                   f"{s['conversations']} conversations updated; {s['pending_after']} still pending "
                   f"({s['seconds']:.1f} s; Postgres: {s['postgres']})")
    if s["backfill_before"]:
        click.echo(f"{s['backfilled']} of {s['backfill_before']} messages synced before the configured embedding "
                   "space existed (another model or embed_text) embedded into it and their vectors pushed")
    if s["postgres"] == "not configured" and s["pending_after"]:
        click.echo("vectors are kept in the local journal; set DATABASE_URL (or database_url in the config "
                   "file) to push to Postgres")
    for line in tombstone_lines(s["purges"]):
        click.echo(line)
    if s.get("fts_moved"):
        from ..localstore import ftsparts
        click.echo(f"full-text index: {s['fts_moved']:,} messages moved into parts of "
                   f"{ftsparts.PART_ROWS:,} (once: a purge then rewrites one part, not the whole index)")
    if s.get("fts_merged"):
        n = s["fts_merged"]
        click.echo(f"full-text index: {n:,} sealed part{'' if n == 1 else 's'} merged into one segment "
                   f"{'' if n == 1 else 'each '}(searches and recall hints look each word up once a part)")
    if s.get("texts_packed"):
        click.echo(f"journal: {s['texts_packed']:,} old messages' text packed "
                   f"({s['texts_saved'] / 1e6:,.1f} MB smaller)")
    if s.get("reclaimed"):
        click.echo(f"journal: {s['reclaimed'] / 1e6:,.0f} MB of free pages given back to the disk")
    for note in s["notes"]:
        click.echo(f"note: {note}")
    for error in s["errors"]:
        click.echo(f"error: {error}", err=True)


def tombstone_lines(purges):
    """What the tombstones of Postgres did here (``purge.sync_purges``), for people."""
    lines = [f"tombstone {t['kind']} {t['target']} (from {t['machine']}): removed {t['conversations']} "
             f"conversations, {t['messages']} messages from the journal" for t in purges.get("removed", ())]
    lines += [f"tombstone {t['kind']} {t['target']} (from {t['machine']}) refused, not applied: {t['reason']}"
              for t in purges.get("quarantined", ())]
    pending = purges.get("pending", ())
    if pending:
        lines.append(f"{len(pending)} tombstones from Postgres would remove {sum(t['sessions'] for t in pending)} "
                     "sessions here: kept aside, nothing removed; `chats purge --apply-remote --dry-run` lists "
                     "them, `chats purge --apply-remote` applies them")
    return lines


@click.group("schedule")
def schedule_group():
    """Run `chats sync` periodically (launchd, systemd user timer or cron)."""


@schedule_group.command("install")
@click.option("--every", "minutes", type=click.IntRange(1, 24 * 60), default=15, show_default=True,
              help="Minutes between runs.")
@click.option("--via", type=click.Choice(["cron", "systemd", "launchd"]), help="Scheduler (default: detected).")
def schedule_install(minutes, via):
    """Install (or replace) the periodic sync."""
    from .. import config
    from ..sync import schedule

    scheduler = schedule.get(via)
    where = scheduler.install(minutes)
    click.echo(f"installed: {scheduler.name} runs the sync every {minutes} min ({where})")
    if config.load().source("database_url").startswith("env"):
        click.echo("note: DATABASE_URL comes from your shell environment, which scheduled jobs do not see; "
                   "put database_url in the config file too.", err=True)


@schedule_group.command("remove")
@click.option("--via", type=click.Choice(["cron", "systemd", "launchd"]), help="Scheduler (default: detected).")
def schedule_remove(via):
    """Remove the periodic sync."""
    from ..sync import schedule

    scheduler = schedule.get(via)
    click.echo(f"removed from {scheduler.name}" if scheduler.remove() else f"nothing installed in {scheduler.name}")


@schedule_group.command("show")
@click.option("--via", type=click.Choice(["cron", "systemd", "launchd"]), help="Scheduler (default: detected).")
def schedule_show(via):
    """Show the installed periodic sync, if any."""
    from ..sync import schedule

    scheduler = schedule.get(via)
    click.echo(scheduler.show() or f"no sync scheduled in {scheduler.name}")


def register(group):
    group.add_command(sync_cmd)
    group.add_command(schedule_group)
