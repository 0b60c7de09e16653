#!/usr/bin/env python3
"""Write every ``chats`` command's ``--help`` into docs/commands.md, from click itself.

docs/commands.md is hand-written prose around marked regions, one per command and subcommand:

    <!-- help: chats search -->
    ...the output of `chats search --help`, generated...
    <!-- /help -->

This script regenerates each region from ``claude_chats.cli.main`` (at a fixed width of 80
columns, so the text does not depend on the terminal it runs in). A page that lacks a region for
a command, or has one for a command that does not exist, is refused with the names, so a new
command cannot land without its reference. ``--check`` writes nothing and exits 1 when the page is
stale (tests/test_docs.py runs it).

    .venv/bin/python scripts/command_reference.py [--check] [--file docs/commands.md]
"""

import argparse
import pathlib
import re
import sys

import click

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WIDTH = 80
REGION = re.compile(r"(<!-- help: (?P<path>[^>\n]+?) -->\n)(?P<body>.*?)(<!-- /help -->)", re.DOTALL)


def help_texts(group, name="chats"):
    """Every command's path (``chats models list``) and its ``--help`` text, the group's first."""
    texts = {}

    def walk(command, ctx):
        texts[ctx.command_path] = command.get_help(ctx)
        if isinstance(command, click.Group):
            for sub_name in command.list_commands(ctx):
                sub = command.get_command(ctx, sub_name)
                walk(sub, click.Context(sub, info_name=sub_name, parent=ctx, **sub.context_settings))

    walk(group, click.Context(group, info_name=name, terminal_width=WIDTH, max_content_width=WIDTH,
                              **group.context_settings))
    return texts


def block(path, text):
    """A region's body: the help as a shell session would show it."""
    return f"```text\n$ {path} --help\n{text}\n```\n"


def render(page, texts):
    """The page with every region regenerated; ValueError naming the commands it lacks or invents."""
    found = [m.group("path") for m in REGION.finditer(page)]
    unknown = [p for p in found if p not in texts]
    missing = [p for p in texts if p not in found]
    twice = sorted({p for p in found if found.count(p) > 1})
    problems = ([f"no such command: {', '.join(unknown)}"] if unknown else []) \
        + ([f"no section for: {', '.join(missing)}"] if missing else []) \
        + ([f"more than one section for: {', '.join(twice)}"] if twice else [])
    if problems:
        raise ValueError("; ".join(problems))
    return REGION.sub(lambda m: m.group(1) + block(m.group("path"), texts[m.group("path")]) + m.group(4), page)


def stale(page, fresh):
    """The commands whose region differs between the page on disk and the regenerated one."""
    old = {m.group("path"): m.group("body") for m in REGION.finditer(page)}
    return [m.group("path") for m in REGION.finditer(fresh) if old.get(m.group("path")) != m.group("body")]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=pathlib.Path, default=ROOT / "docs" / "commands.md")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the page is stale")
    args = parser.parse_args(argv)
    from claude_chats.cli import main as chats

    page = args.file.read_text(encoding="utf-8")
    try:
        fresh = render(page, help_texts(chats))
    except ValueError as exc:
        sys.exit(f"{args.file}: {exc}")
    if fresh == page:
        print(f"{args.file}: up to date")
        return 0
    if args.check:
        print(f"{args.file} is stale for: {', '.join(stale(page, fresh)) or 'its layout'}; "
              f"run scripts/command_reference.py", file=sys.stderr)
        return 1
    args.file.write_text(fresh, encoding="utf-8")
    print(f"{args.file}: rewrote {', '.join(stale(page, fresh))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
