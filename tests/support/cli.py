"""``chats`` in-process through click's runner, the way every CLI test calls it."""

from click.testing import CliRunner

from claude_chats.cli import main


def chats(*args, input=None):
    """The result of ``chats <args>``; an unexpected exception is raised, not caught into the result."""
    return CliRunner().invoke(main, [str(a) for a in args], input=input, catch_exceptions=False)
