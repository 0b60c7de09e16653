"""Embedding providers behind one interface, chosen by name from the config.

Public API::

    get_provider(settings, /, **overrides) -> EmbeddingProvider
        ``settings`` is a ``config.Settings`` (the caller resolves it: this
        package reads no configuration), or a provider name ("llama",
        "ollama", "bedrock", "openai"), then built from ``overrides`` alone.
        Overrides are constructor arguments of the provider class (``model``,
        ``dimensions``, ``threads``, ``base_url``, ``client``...) and win over
        the settings.
    embedder(settings, /, **overrides) -> the provider as sync and search use
        it: ``get_provider``'s, embedding messages with the configured text
        (``embed_text``, see ``recipe``), whose space says so.
    provider_class(name) -> type;  register(name, "module:Class");  PROVIDERS;
    check_provider_name(name): ConfigError naming the choices
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
from urllib.parse import urlsplit

from ..errors import ConfigError
from ..hosts import is_local_host
from .chunking import DOCUMENT, QUERY, Chunk, chunk_text, embed_texts
from .recipe import RecipeProvider, recipe_of, with_text

# numpy's (``base``, ``spaces``): imported when first asked for, so that what needs none of them (``chats
# status`` reading the embedding recipe's limits) does not pay numpy's import (70-100 ms)
_LATER = {"EmbeddingProvider": "base", "Space": "base", "normalize": "base", "require": "base",
          "CANARY_TEXT": "spaces", "canary_vector": "spaces", "check_canary": "spaces", "cosine": "spaces"}

PROVIDERS = {
    "llama": "claude_chats.models.llama:LlamaProvider",
    "ollama": "claude_chats.models.ollama:OllamaProvider",
    "bedrock": "claude_chats.models.bedrock:BedrockProvider",
    "openai": "claude_chats.models.openai:OpenAIProvider",
}

__all__ = [
    "CANARY_TEXT", "DOCUMENT", "PROVIDERS", "QUERY", "Chunk", "EmbeddingProvider", "Space",
    "RecipeProvider", "canary_vector", "check_canary", "chunk_text", "cosine", "embed_texts", "embedder",
    "check_provider_name", "get_provider", "is_remote", "normalize", "provider_class", "recipe_of", "register", "require", "with_text",
]


def __getattr__(name):
    if name in _LATER:
        return getattr(importlib.import_module(f"{__name__}.{_LATER[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register(name, target):
    """Add a provider: ``target`` is a class or a ``"module:Class"`` string."""
    PROVIDERS[name] = target


def check_provider_name(name):
    """ConfigError naming the registered providers when ``name`` is not one of them."""
    if name not in PROVIDERS:
        raise ConfigError(f"unknown embedding provider {name!r}; choose one of: "
                          f"{', '.join(sorted(PROVIDERS))}")


def provider_class(name):
    """The provider class registered under ``name`` (imports its module)."""
    check_provider_name(name)
    target = PROVIDERS[name]
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        target = getattr(importlib.import_module(module), attr)
    return target


def get_provider(settings, /, **overrides):
    """The provider of ``settings``, constructed (see the module docstring)."""
    if isinstance(settings, str):
        return provider_class(settings)(**overrides)
    return provider_class(settings.provider).from_settings(settings, **overrides)


def embedder(settings, /, **overrides):
    """The provider of ``settings`` with their embedding text (``embed_text``): what sync embeds
    messages with and what search checks the stored space against."""
    return with_text(get_provider(settings, **overrides), settings)


def is_remote(provider):
    """Whether text given to ``provider`` leaves the machine: hosted APIs always,
    HTTP providers (an Ollama daemon) when their server is not local."""
    if getattr(provider, "name", None) in ("bedrock", "openai"):
        return True
    base_url = getattr(provider, "base_url", None)
    if not base_url:
        return False
    return not is_local_host(urlsplit(str(base_url)).hostname or "")
