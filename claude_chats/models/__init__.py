"""Embedding providers behind one interface, chosen by name from the config.

Public API::

    get_provider(settings=None, /, **overrides) -> EmbeddingProvider
        ``settings`` is a ``config.Settings``, a provider name ("llama",
        "ollama", "bedrock", "openai") or None (``config.load()``). Overrides
        are constructor arguments of the provider class (``model``,
        ``dimensions``, ``threads``, ``base_url``, ``client``...) and win over
        the settings.
    embedder(settings=None, /, **overrides) -> the provider as sync and search use
        it: ``get_provider``'s, embedding messages with the configured text
        (``embed_text``, see ``recipe``), whose space says so.
    provider_class(name) -> type;  register(name, "module:Class");  PROVIDERS
    EmbeddingProvider: embed_documents(texts) -> float32 (n, dim) L2-normalised,
        embed_query(text) -> (dim,); attributes name, model_id, dimensions,
        max_input_tokens, max_input_chars, batch_size; ``space`` -> Space
        (provider, model, dimensions, options, key).
    chunk_text(text, provider) -> [(start_char, end_char, chunk_text)]
    embed_texts(provider, texts) -> per text [Chunk(index, start, end, vector)]
    CANARY_TEXT, canary_vector(provider), check_canary(space, stored, provider)

Importing this package is cheap: providers import their SDKs (llama_cpp, boto3,
openai, httpx) only when constructed, with an install hint when missing.
"""

import importlib

from ..errors import ConfigError
from .base import DOCUMENT, QUERY, EmbeddingProvider, Space, normalize, require
from .chunking import Chunk, chunk_text, embed_texts
from .recipe import RecipeProvider, recipe_of, with_text
from .spaces import CANARY_TEXT, canary_vector, check_canary, cosine

PROVIDERS = {
    "llama": "claude_chats.models.llama:LlamaProvider",
    "ollama": "claude_chats.models.ollama:OllamaProvider",
    "bedrock": "claude_chats.models.bedrock:BedrockProvider",
    "openai": "claude_chats.models.openai:OpenAIProvider",
}

__all__ = [
    "CANARY_TEXT", "DOCUMENT", "PROVIDERS", "QUERY", "Chunk", "EmbeddingProvider", "Space",
    "RecipeProvider", "canary_vector", "check_canary", "chunk_text", "cosine", "embed_texts", "embedder",
    "get_provider", "is_remote", "normalize", "provider_class", "recipe_of", "register", "require", "with_text",
]


def register(name, target):
    """Add a provider: ``target`` is a class or a ``"module:Class"`` string."""
    PROVIDERS[name] = target


def provider_class(name):
    """The provider class registered under ``name`` (imports its module)."""
    try:
        target = PROVIDERS[name]
    except KeyError:
        raise ConfigError(f"unknown embedding provider {name!r}; choose one of: "
                          f"{', '.join(sorted(PROVIDERS))}") from None
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        target = getattr(importlib.import_module(module), attr)
    return target


def get_provider(settings=None, /, **overrides):
    """The configured provider, constructed (see the module docstring)."""
    name, settings = _resolve(settings)
    return provider_class(name).from_settings(settings, **overrides)


def embedder(settings=None, /, **overrides):
    """The configured provider with the configured embedding text: what sync embeds
    messages with and what search checks the stored space against."""
    name, resolved = _resolve(settings)
    return with_text(provider_class(name).from_settings(resolved, **overrides), resolved)


def _resolve(settings):
    if settings is None or isinstance(settings, str):
        from .. import config

        loaded = config.load()
        return settings or loaded.provider, loaded
    return settings.provider, settings


def is_remote(provider):
    """Whether text given to ``provider`` leaves the machine: hosted APIs always,
    HTTP providers (an Ollama daemon) when their server is not local."""
    if getattr(provider, "name", None) in ("bedrock", "openai"):
        return True
    base_url = getattr(provider, "base_url", None)
    if not base_url:
        return False
    from urllib.parse import urlsplit

    from ..sync import dburl

    return not dburl.is_local_host(urlsplit(str(base_url)).hostname or "")
