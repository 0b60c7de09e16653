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
    # every character printable but newlines and tabs (a message of many lines: the usual case, checked in C;
    # each character looked at in Python took a quarter of `chats show`'s 0.75 s for 20,000 messages)
    if text.isprintable() or text.replace("\n", " ").replace("\t", " ").isprintable():
        return text
    return "".join(c if c.isprintable() or c in "\n\t" else c.encode("unicode_escape").decode("ascii") for c in text)


class Batched:
    """Lines for ``click.echo`` gathered into writes of about ``size`` characters: a conversation of
    20,000 messages was 40,000 echoes, each asking whether stdout is a terminal (18 % of `chats show`)."""

    def __init__(self, size=1 << 20):
        self.size, self.parts, self.held = size, [], 0

    def __enter__(self):
        return self

    def line(self, text):
        self.parts.append(text)
        self.held += len(text) + 1
        if self.held >= self.size:
            self.flush()

    def flush(self):
        if self.parts:
            click.echo("\n".join(self.parts))
            self.parts, self.held = [], 0

    def __exit__(self, kind, *_):
        if kind is None:
            self.flush()
