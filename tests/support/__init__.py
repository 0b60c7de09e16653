"""What the tests share. Test modules import from here, never from each other.

Helpers: ``lines`` (transcript lines), ``fakes`` (test embedders, a TCP proxy, an HTTP
server speaking the embedding APIs), ``hooks`` (the hook and ``chats`` as processes,
growing transcripts), ``fuzzing`` (strategies and journal checks), ``cli`` (``chats``
through click's runner), ``redaction_corpus`` (synthetic secrets and look-alikes).
Fixture modules, registered as plugins by tests/conftest.py: ``pg`` (a real Postgres),
``model`` (the real test model), ``corpus`` (the transcripts of ../shared), ``journals``
(the search corpus and the named journal fixtures).
"""

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]   # the project: where a subprocess can import tests.support
