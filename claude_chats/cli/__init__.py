"""The ``chats`` command: thin over the library.

Each command group lives in its own module with a ``register(group)``
function, so the CLI stays small modules rather than one giant file. Command
modules import heavy libraries inside the command functions, never at the top.
"""

import importlib

import click

from .. import paths
from ..errors import ClaudeChatsError

COMMAND_MODULES = ("journal", "models", "sync", "serve", "ui", "admin", "evaluate")


class _Group(click.Group):
    """Turns claude-chats errors into a one-line message and exit code 1."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except ClaudeChatsError as exc:
            raise click.ClickException(str(exc)) from None
        except UnicodeEncodeError:
            # Arguments are decoded with surrogateescape: bytes that are not UTF-8 cannot be searched or stored.
            raise click.ClickException("an argument is not valid UTF-8 text") from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="claude-chats")
def main():
    """claude-chats: a searchable memory of your Claude Code conversations."""
    paths.check_folders()


for _name in COMMAND_MODULES:
    importlib.import_module(f"{__name__}.{_name}").register(main)
