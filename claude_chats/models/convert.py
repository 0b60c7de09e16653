"""Convert a BERT-family sentence-transformers checkpoint to GGUF, without torch.

``convert(src_dir, out_path, outtype="f16")`` reads ``config.json``,
``model.safetensors`` (or its shards), ``vocab.txt`` and the sentence-transformers
pooling config, and writes a GGUF file that llama.cpp (and so Ollama and the
``llama`` provider) loads as an embedding model. The layout follows llama.cpp's
``convert_hf_to_gguf.py`` for ``BertModel``: tensor names from ``gguf``'s name
map, WordPiece vocabulary in "phantom space" form, pooling type from the
checkpoint. Needs ``numpy``, ``safetensors`` and ``gguf``
(``pip install 'claude-chats[convert]'``).
"""

import json
import logging
import os

from ..errors import ClaudeChatsError
from .base import require

BERT_ARCHITECTURES = ("BertModel", "BertForMaskedLM", "BertForSequenceClassification")
SKIPPED_TENSORS = ("embeddings.position_ids", "pooler.", "cls.")
POOLING_KEYS = (("pooling_mode_mean_tokens", "MEAN"), ("pooling_mode_cls_token", "CLS"),
                ("pooling_mode_lasttoken", "LAST"))
DEFAULT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
F32_ALWAYS = ("position_embd.weight", "token_types.weight")  # llama.cpp adds them to f32 directly


class ConversionError(ClaudeChatsError):
    """The checkpoint cannot be converted (missing file, unsupported architecture)."""


def convert(src_dir, out_path, outtype="f16", name=None):
    """Write ``out_path`` (GGUF) from the checkpoint in ``src_dir``; returns ``out_path``."""
    gguf = require("gguf", "convert")
    if outtype not in ("f16", "f32"):
        raise ConversionError(f"outtype must be f16 or f32, not {outtype!r}")
    config = _read_json(src_dir, "config.json")
    _check_architecture(config)
    n_layers = config["num_hidden_layers"]
    tmp_path = f"{out_path}.part"
    writer = gguf.GGUFWriter(tmp_path, "bert")
    try:
        _write_hparams(writer, gguf, config, src_dir, outtype, name or os.path.basename(os.path.abspath(src_dir)))
        _write_vocab(writer, gguf, config, src_dir)
        _write_tensors(writer, gguf, src_dir, n_layers, outtype)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
    finally:
        writer.close()
    os.replace(tmp_path, out_path)
    return out_path


def _read_json(src_dir, name, required=True):
    path = os.path.join(src_dir, name)
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        if required:
            raise ConversionError(f"{path} not found: is {src_dir} a sentence-transformers checkpoint?") from None
        return None


def _check_architecture(config):
    archs = config.get("architectures") or []
    if config.get("model_type") != "bert" or not any(a in BERT_ARCHITECTURES for a in archs):
        raise ConversionError(
            f"unsupported architecture {archs or config.get('model_type')!r}: only BERT-family "
            "checkpoints are converted here; use llama.cpp's convert_hf_to_gguf.py for others")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise ConversionError("only absolute position embeddings are supported")


def pooling_type(src_dir):
    """``MEAN``, ``CLS`` or ``LAST`` from the sentence-transformers pooling config (``MEAN`` if none)."""
    modules = _read_json(src_dir, "modules.json", required=False) or []
    for module in modules:
        if module.get("type", "").endswith("Pooling"):
            pooling = _read_json(os.path.join(src_dir, module.get("path", "")), "config.json")
            for key, kind in POOLING_KEYS:
                if pooling.get(key):
                    return kind
            raise ConversionError(f"unsupported pooling config in {src_dir}: {pooling}")
    return "MEAN"


def _write_hparams(writer, gguf, config, src_dir, outtype, name):
    writer.add_name(name)
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_layer_norm_eps(config.get("layer_norm_eps", 1e-12))
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType[pooling_type(src_dir)])
    file_type = gguf.LlamaFileType.MOSTLY_F16 if outtype == "f16" else gguf.LlamaFileType.ALL_F32
    writer.add_file_type(file_type)


def read_vocab(src_dir):
    """Tokens of ``vocab.txt`` in id order."""
    path = os.path.join(src_dir, "vocab.txt")
    try:
        with open(path, encoding="utf-8") as fh:
            return [line.rstrip("\n") for line in fh]
    except FileNotFoundError:
        raise ConversionError(f"{path} not found: only WordPiece (vocab.txt) tokenizers are supported") from None


def _special_tokens(src_dir):
    tokenizer = _read_json(src_dir, "tokenizer.json", required=False) or {}
    specials = {t["content"] for t in tokenizer.get("added_tokens", []) if t.get("special")}
    return specials or set(DEFAULT_SPECIALS)


def _write_vocab(writer, gguf, config, src_dir):
    tokens = read_vocab(src_dir)
    specials = _special_tokens(src_dir)
    types = [gguf.TokenType.CONTROL if t in specials else gguf.TokenType.NORMAL for t in tokens]
    for i in range(len(tokens), config.get("vocab_size", len(tokens))):
        tokens.append(f"[PAD{i}]")
        types.append(gguf.TokenType.UNUSED)
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("default")
    writer.add_token_list([_phantom(tok, kind, gguf) for tok, kind in zip(tokens, types)])
    writer.add_token_types(types)
    writer.add_token_type_count(config.get("type_vocab_size", 1))
    vocab_log = logging.getLogger("gguf.vocab")   # "No handler for special token type cls": llama.cpp's too
    level = vocab_log.level
    vocab_log.setLevel(logging.ERROR)
    try:
        gguf.SpecialVocab(src_dir, n_vocab=len(tokens)).add_to_gguf(writer, quiet=True)
    finally:
        vocab_log.setLevel(level)


def _phantom(token, kind, gguf):
    """llama.cpp's WordPiece form: word starts get U+2581, continuations lose ``##``."""
    if kind != gguf.TokenType.NORMAL:
        return token
    return token[2:] if token.startswith("##") else "\u2581" + token


def _shards(src_dir):
    index = _read_json(src_dir, "model.safetensors.index.json", required=False)
    if index:
        return sorted(set(index["weight_map"].values()))
    if os.path.exists(os.path.join(src_dir, "model.safetensors")):
        return ["model.safetensors"]
    raise ConversionError(f"no model.safetensors in {src_dir} (PyTorch .bin checkpoints need torch; "
                          "convert them to safetensors first)")


def _tensor_name(name, name_map):
    name = name.removeprefix("bert.")
    if name.endswith(".gamma"):
        name = name[:-6] + ".weight"
    elif name.endswith(".beta"):
        name = name[:-5] + ".bias"
    if name.startswith(SKIPPED_TENSORS):
        return None
    mapped = name_map.get_name(name, try_suffixes=(".weight", ".bias"))
    if mapped is None:
        raise ConversionError(f"unexpected tensor {name!r} in a BERT checkpoint")
    return mapped


def _write_tensors(writer, gguf, src_dir, n_layers, outtype):
    np = require("numpy", "convert")
    safetensors = require("safetensors", "convert")
    name_map = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, n_layers)
    for shard in _shards(src_dir):
        with safetensors.safe_open(os.path.join(src_dir, shard), framework="np") as fh:
            for key in fh.keys():
                name = _tensor_name(key, name_map)
                if name is None:
                    continue
                data = fh.get_tensor(key).astype(np.float32)
                if outtype == "f16" and data.ndim == 2 and name not in F32_ALWAYS:
                    data = data.astype(np.float16)
                writer.add_tensor(name, data)
