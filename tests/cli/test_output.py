"""The CLI's printing of stored text (``cli.output``): the terminal escaping is exact whatever the text,
and a long conversation printed in batches is the same bytes in the same order."""

import click
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from claude_chats.cli.output import Batched, printable


def escaped_char_by_char(text):
    """The definition: each control or format character but a newline and a tab as its escape."""
    return "".join(c if c.isprintable() or c in "\n\t" else c.encode("unicode_escape").decode("ascii") for c in text)


@settings(max_examples=400)
@given(st.text(alphabet=st.sampled_from("ab \n\t\r\x1b\x07\x9b\u202e\u200b\u2028\x00é😀")
               | st.characters(), max_size=60))
def test_printable_is_the_character_by_character_escape_of_any_text(text):
    assert printable(text) == escaped_char_by_char(text)


def test_printable_keeps_lines_and_tabs_and_escapes_what_moves_the_terminal():
    assert printable("one\n\ttwo") == "one\n\ttwo"
    assert printable("a\x1b]2;t\x07\nb\r") == "a\\x1b]2;t\\x07\nb\\r"
    assert printable(None) == ""


def test_batched_lines_are_printed_in_order_across_flushes_and_not_after_an_error():
    @click.command()
    @click.argument("size", type=int)
    @click.option("--fail", is_flag=True)
    def cmd(size, fail):
        with Batched(size) as out:
            for n in range(50):
                out.line(f"line {n}")
                if fail and n == 40:
                    raise click.ClickException("stopped")

    result = CliRunner().invoke(cmd, ["16"])
    assert result.output == "".join(f"line {n}\n" for n in range(50))
    assert CliRunner().invoke(cmd, ["1000000"]).output == result.output
    failed = CliRunner().invoke(cmd, ["16", "--fail"])
    assert failed.exit_code == 1
    printed = failed.output.split("Error: stopped")[0]
    assert printed == "".join(f"line {n}\n" for n in range(len(printed.splitlines())))
    assert len(printed.splitlines()) < 41
