"""GGUF conversion of a sentence-transformers checkpoint, without torch."""

import json
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from claude_chats.cli import main
from claude_chats.models.convert import ConversionError, convert, pooling_type
from claude_chats.models.llama import LlamaProvider
from tests.support.model import REFERENCE, reference


def test_converted_file_layout(test_model_path):
    from gguf import GGUFReader

    reader = GGUFReader(str(test_model_path))
    field = lambda key: reader.fields[key].contents()  # noqa: E731
    assert field("general.architecture") == "bert"
    assert field("bert.pooling_type") == 1 and field("bert.attention.causal") is False
    assert (field("bert.embedding_length"), field("bert.block_count"), field("bert.context_length")) == (384, 6, 512)
    tokens = field("tokenizer.ggml.tokens")
    assert tokens[101] == "[CLS]" and tokens[1996] == "\u2581the" and tokens[2015] == "s"  # "##s" -> "s"
    assert field("tokenizer.ggml.model") == "bert" and field("tokenizer.ggml.bos_token_id") == 101
    types = {t.name: t.tensor_type.name for t in reader.tensors}
    assert types["token_embd.weight"] == "F16" and types["blk.0.attn_q.weight"] == "F16"
    assert types["position_embd.weight"] == "F32" and types["blk.0.attn_output_norm.weight"] == "F32"
    assert not any(name.startswith("pooler") for name in types)


def test_cli_convert_f32_matches_the_reference(test_model_dir, test_model_path, tmp_path):
    out = tmp_path / "minilm.f32.gguf"
    result = CliRunner().invoke(main, ["models", "convert", str(test_model_dir), str(out), "--outtype", "f32"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert f"CLAUDE_CHATS_MODEL={out}" in result.output
    with LlamaProvider(model=str(out), threads=1) as provider:
        vectors = provider.embed_documents(list(REFERENCE))
    for sentence, vector in zip(REFERENCE, vectors):
        assert float(vector @ reference(sentence)) >= 0.99999


def copy_configs(src, dst):
    dst.mkdir()
    for name in ("config.json", "modules.json", "vocab.txt"):
        shutil.copy(src / name, dst / name)
    (dst / "1_Pooling").mkdir()
    shutil.copy(src / "1_Pooling" / "config.json", dst / "1_Pooling" / "config.json")
    return dst


def test_pooling_comes_from_the_checkpoint(test_model_dir, tmp_path):
    assert pooling_type(test_model_dir) == "MEAN"
    copy = copy_configs(test_model_dir, tmp_path / "cls")
    pooling = json.loads((copy / "1_Pooling" / "config.json").read_text())
    pooling.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    (copy / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    assert pooling_type(copy) == "CLS"


def test_unsupported_checkpoints_are_refused(test_model_dir, tmp_path):
    copy = copy_configs(test_model_dir, tmp_path / "xlm")
    config = json.loads((copy / "config.json").read_text())
    config.update(model_type="xlm-roberta", architectures=["XLMRobertaModel"])
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConversionError, match="only BERT-family"):
        convert(copy, tmp_path / "x.gguf")
    bert = copy_configs(test_model_dir, tmp_path / "noweights")
    with pytest.raises(ConversionError, match="no model.safetensors"):
        convert(bert, tmp_path / "y.gguf")
    assert not (tmp_path / "y.gguf").exists()
    with pytest.raises(ConversionError, match="config.json not found"):
        convert(tmp_path, tmp_path / "z.gguf")


def test_reference_vectors_are_unit_length():
    for sentence in REFERENCE:
        assert abs(float(np.linalg.norm(reference(sentence))) - 1) < 1e-6
