"""Find a model's GGUF file in the local Ollama store, without the Ollama daemon.

Ollama keeps ``manifests/<registry>/<namespace>/<model>/<tag>`` (JSON, OCI-like)
and content-addressed ``blobs/sha256-<hex>`` under ``$OLLAMA_MODELS`` or
``~/.ollama/models``. The layer of media type ``application/vnd.ollama.image.model``
is the GGUF file Ollama itself runs, so the ``llama`` provider reproduces its
vectors exactly.
"""

import json
import os

MODEL_MEDIA_TYPE = "application/vnd.ollama.image.model"
DEFAULT_REGISTRY, DEFAULT_NAMESPACE, DEFAULT_TAG = "registry.ollama.ai", "library", "latest"


def store_dir(environ=None):
    """``$OLLAMA_MODELS`` or ``~/.ollama/models``."""
    environ = os.environ if environ is None else environ
    value = environ.get("OLLAMA_MODELS")
    return os.path.expanduser(value) if value else os.path.expanduser("~/.ollama/models")


def parse_name(name):
    """``(registry, namespace, model, tag)`` of an Ollama model name such as ``mxbai-embed-large``."""
    base, _, tag = name.partition(":")
    if "/" in tag:  # a registry with a port, e.g. localhost:5000/ns/model
        base, tag = name.rsplit(":", 1) if name.count(":") > 1 else (name, "")
    parts = base.split("/")
    if len(parts) == 1:
        parts = [DEFAULT_REGISTRY, DEFAULT_NAMESPACE, parts[0]]
    elif len(parts) == 2:
        parts = [DEFAULT_REGISTRY, *parts]
    elif len(parts) > 3:
        parts = [parts[0], "/".join(parts[1:-1]), parts[-1]]
    return (*parts, tag or DEFAULT_TAG)


def manifest_path(name, root=None):
    return os.path.join(root or store_dir(), "manifests", *parse_name(name))


def blob_path(digest, root=None):
    """Path of the blob ``sha256:<hex>`` (either file-name form Ollama has used), or None."""
    root = root or store_dir()
    for candidate in (digest.replace(":", "-"), digest):
        path = os.path.join(root, "blobs", candidate)
        if os.path.isfile(path):
            return path
    return None


def resolve(name, root=None):
    """Path of the GGUF blob of Ollama model ``name``, or None when not in the store."""
    try:
        with open(manifest_path(name, root), encoding="utf-8") as fh:
            manifest = json.load(fh)
    except (OSError, ValueError):
        return None
    for layer in manifest.get("layers", []):
        if layer.get("mediaType") == MODEL_MEDIA_TYPE and layer.get("digest"):
            return blob_path(layer["digest"], root)
    return None


def list_models(root=None):
    """Names (``model:tag``, or with namespace/registry when not the defaults) found in the store."""
    top = os.path.join(root or store_dir(), "manifests")
    names = []
    for dirpath, _, files in os.walk(top):
        rel = os.path.relpath(dirpath, top).split(os.sep)
        if len(rel) != 3:
            continue
        registry, namespace, model = rel
        prefix = "" if registry == DEFAULT_REGISTRY else f"{registry}/"
        prefix += "" if (namespace == DEFAULT_NAMESPACE and not prefix) else f"{namespace}/"
        names.extend(f"{prefix}{model}:{tag}" for tag in sorted(files))
    return sorted(names)
