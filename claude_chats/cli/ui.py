"""``chats ui``: the local web app over the memory."""

import click


@click.command("ui")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535),
              help="The port on 127.0.0.1 (0: any free port).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to listen on. Anything but loopback needs --allow-remote.")
@click.option("--allow-remote", is_flag=True,
              help="Allow a non-loopback --host: whoever reaches it with the URL reads every conversation.")
@click.option("--no-open", is_flag=True, help="Print the URL; do not open a browser.")
@click.option("--local", is_flag=True, help="The local journal only, not Postgres.")
def ui_cmd(port, host, allow_remote, no_open, local):
    """Browse and search the memory in a web browser (a local web app).

    Prints the URL it serves, with its access token, and opens it. Reads the same stores
    as `chats search` (Postgres when configured and reachable, else the journal), with text
    redacted as the MCP tools redact it. Stop it with Ctrl-C.
    """
    from ..ui.server import serve

    serve(host=host, port=port, allow_remote=allow_remote, open_browser=not no_open, use_postgres=not local)


def register(group):
    group.add_command(ui_cmd)
