"""``chats eval QUERIES.jsonl``: retrieval quality over your own history, and model bakeoffs."""

import click

from .output import emit_json

MODES = ("hybrid", "semantic", "fulltext")


@click.command("eval")
@click.argument("queries", type=click.Path(dir_okay=False))
@click.option("--mode", "modes", multiple=True, type=click.Choice(MODES),
              help="Search mode(s) to score (default: all three; bakeoff: semantic and hybrid).")
@click.option("--store", type=click.Choice(["local", "postgres"]), default="local", show_default=True,
              help="Evaluate over the local journal or over Postgres.")
@click.option("--model", "models", multiple=True, metavar="[PROVIDER:]MODEL",
              help="Bakeoff: embed the journal's messages with each model into its own space (in a scratch "
                   "copy; your journal is not changed) and score each. Repeat for several models.")
@click.option("--save-misses", type=click.Path(dir_okay=False, writable=True),
              help="Write the queries whose relevant session missed the top 10, with what came first (JSONL).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def eval_cmd(queries, modes, store, models, save_misses, as_json):
    """Score search over a query file: recall@1/5/10, MRR and nDCG@10 of the right session.

    QUERIES has one JSON object per line: {"query": "...", "relevant_session_ids":
    ["..."], "id": "optional"}. A session's rank is the rank of its best hit.
    """
    from .. import evaluate

    if save_misses:
        evaluate.check_writable(save_misses)   # before the evaluation runs, not after
    loaded = evaluate.load_queries(queries)
    if models:
        if store == "postgres":
            raise click.ClickException("a bakeoff builds its spaces from the local journal: drop --store postgres")
        _bakeoff(loaded, models, modes or ("semantic", "hybrid"), save_misses, as_json)
        return
    searcher = _searcher(store)
    try:
        results = evaluate.evaluate(searcher, loaded, modes or MODES)
    finally:
        searcher.close()
    _misses(save_misses, results, as_json)
    if as_json:
        emit_json({"queries": len(loaded), "store": store, "modes": [r.as_dict() for r in results]})
        return
    click.echo(evaluate.results_table(results))
    for result in results:
        for note in result.notes:
            click.echo(f"note ({result.mode}): {note}", err=True)


def _searcher(store):
    from .. import config
    from ..stores import open_searcher

    settings = config.load()
    if store == "local":
        return open_searcher(settings, use_postgres=False)
    if not settings.database_url:
        raise click.ClickException("no Postgres configured (set database_url with `chats config set`, "
                                   "or DATABASE_URL); use --store local")
    return open_searcher(settings, use_journal=False, wait=10.0)


def _bakeoff(loaded, models, modes, save_misses, as_json):
    from .. import config, evaluate, paths

    settings = config.load()
    providers = [(spec, _factory(settings, spec)) for spec in models]
    rows = evaluate.bakeoff(paths.journal_path(), loaded, providers, modes)
    _misses(save_misses, [r for row in rows for r in row.results], as_json, labels=[
        row.model for row in rows for _ in row.results])
    if as_json:
        emit_json({"queries": len(loaded), "models": [row.as_dict() for row in rows]})
        return
    click.echo(evaluate.bakeoff_table(rows, modes))


def _factory(settings, spec):
    """A provider factory for ``[provider:]model`` (the configured provider when none is named),
    embedding the configured text (``embed_text``) like sync."""
    from ..models import PROVIDERS, provider_class, with_text

    name, _, model = spec.partition(":")
    if not model or name not in PROVIDERS:
        name, model = settings.provider, spec
    return lambda: with_text(provider_class(name).from_settings(settings, model=model), settings)


def _misses(path, results, as_json, labels=None):
    if not path:
        return
    from .. import evaluate

    if labels:
        for result, label in zip(results, labels):
            for miss in result.misses:
                miss["model"] = label
    count = evaluate.write_misses(path, results)
    if not as_json:
        click.echo(f"{count} misses written to {path}", err=True)


def register(group):
    group.add_command(eval_cmd)
