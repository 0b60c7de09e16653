"""Printing for the CLI: JSON for machines, plain lines for people."""

import json
import sys

import click


def emit_json(value):
    click.echo(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def is_tty():
    return sys.stdout.isatty()


def one_line(text, limit=160):
    text = " ".join((text or "").split())
    return printable(text if len(text) <= limit else text[:limit - 1] + "…")


def printable(text):
    """Stored text (any machine's, any transcript's) as a terminal may print it: each control or format
    character but a newline and a tab as its escape (``\\x1b``), so no stored byte moves the cursor,
    retitles the window or hides what follows."""
    text = str(text or "")
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in "\n\t" else c.encode("unicode_escape").decode("ascii") for c in text)
