"""The real Claude Code transcripts of ../shared, beside the project (absent on most machines)."""

import pathlib

import pytest

SHARED = pathlib.Path(__file__).resolve().parents[3] / "shared"
CORPUS = SHARED / "corpus" / "transcripts"


@pytest.fixture
def corpus():
    """The transcripts folder of ../shared; the test skips cleanly when it is not there."""
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus/transcripts not present")
    return CORPUS
