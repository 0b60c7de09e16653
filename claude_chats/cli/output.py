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
    return text if len(text) <= limit else text[:limit - 1] + "…"
