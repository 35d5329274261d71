"""The GGUF path on a real GGUF file: a tiny Llama (SmolLM2's architecture) saved in the test
both as a Hugging Face folder and, with the same weights and tokenizer, as a GGUF file written
with `gguf.GGUFWriter` (llama.cpp's layout: its tensor names, rotary-permuted Q/K rows, the
byte-level BPE as `gpt2` tokenizer metadata). Loaded through scalelab's loader, the two must
give the same tokens, the same hidden states and the same d. Nothing is downloaded."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from scalelab.lm.load import load_model_for_embedding
from scalelab.probe.estimate import EstimateConfig, embed, estimate_dimension
from scalelab.text.corpora import load_corpus
from scalelab.text.store import TokenStore, prepare_corpus

gguf = pytest.importorskip("gguf", reason="the GGUF reader is the smollm extra")
pytest.importorskip("accelerate", reason="the smollm extra")

N_HEAD, N_KV_HEAD = 4, 2
# float32 on both sides: the two loads are compared exactly
CFG = EstimateConfig(split="all", batch_size=256, per_doc=4, dtype="float32")


def _llama_order(w: np.ndarray, n_head: int) -> np.ndarray:
    """Q/K rows in llama.cpp's rotary layout: HF rotates the two halves of each head
    (rotate_half), llama.cpp adjacent pairs, so each head's rows i and i + h/2 become
    neighbours (transformers undoes this when it reads the file)."""
    half = w.shape[0] // n_head // 2
    return w.reshape(n_head, 2, half, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _write_gguf(model: torch.nn.Module, tok_json: dict, path: Path) -> None:
    """The model's float32 weights and its tokenizer as a llama-architecture GGUF file."""
    cfg = model.config
    arch = gguf.MODEL_ARCH.LLAMA
    writer = gguf.GGUFWriter(str(path), gguf.MODEL_ARCH_NAMES[arch])
    writer.add_context_length(cfg.max_position_embeddings)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_block_count(cfg.num_hidden_layers)
    writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(cfg.num_attention_heads)
    writer.add_head_count_kv(cfg.num_key_value_heads)
    writer.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
    writer.add_rope_freq_base(float(cfg.rope_parameters["rope_theta"]))
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    vocab = tok_json["model"]["vocab"]
    tokens = sorted(vocab, key=vocab.get)
    special = {t["content"] for t in tok_json["added_tokens"] if t["special"]}
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_types(
        [gguf.TokenType.CONTROL if t in special else gguf.TokenType.NORMAL for t in tokens]
    )
    writer.add_token_merges([" ".join(m) for m in tok_json["model"]["merges"]])
    writer.add_eos_token_id(vocab["<|endoftext|>"])
    names = gguf.get_tensor_name_map(arch, cfg.num_hidden_layers)
    for name, value in model.state_dict().items():
        if name == "lm_head.weight":
            continue  # tied: a file without output.weight reads as tie_word_embeddings
        w = value.numpy()
        if ".q_proj." in name:
            w = _llama_order(w, cfg.num_attention_heads)
        elif ".k_proj." in name:
            w = _llama_order(w, cfg.num_key_value_heads)
        base = names.get_name(name.removesuffix(".weight"))
        assert base is not None, name
        writer.add_tensor(f"{base}.weight", np.ascontiguousarray(w, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A random 2-layer Llama with grouped-query attention and a byte-level BPE, saved as an
    HF folder (safetensors + tokenizer.json) and as a GGUF file alone in another folder."""
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    root = tmp_path_factory.mktemp("gguf")
    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    lexicon = ["".join(rng.choice(letters, rng.integers(2, 8))) for _ in range(300)]
    docs = [" ".join(rng.choice(lexicon, rng.integers(30, 90))) for _ in range(300)]
    docs += ["Tabs\tand ümlauts, digits 1234 and 'quotes' don't break it."] * 4
    text = root / "corpus.txt"
    text.write_text("\n\n".join(docs), encoding="utf-8")
    store = prepare_corpus(load_corpus(text), root / "store", vocab_size=400, quiet=True)
    tok = TokenStore(store, "test").tokenizer()
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=48,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=N_HEAD,
        num_key_value_heads=N_KV_HEAD,
        max_position_embeddings=64,
        tie_word_embeddings=True,
        rope_theta=10000.0,
    )
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():  # random RMSNorm gains, so a misplaced norm tensor would show
        for p in model.parameters():
            if p.ndim == 1:
                p.uniform_(0.5, 1.5)
    model.save_pretrained(root / "hf")
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>")
    fast.save_pretrained(root / "hf")
    (root / "gguf").mkdir()
    _write_gguf(model, json.loads(tok.to_str()), root / "gguf" / "tiny-F32.gguf")
    return {"text": text, "hf": root / "hf", "gguf": root / "gguf"}


def test_gguf_file_gives_the_hf_folders_tokens_states_and_d(twins, capfd):
    import gguf

    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    hf = load_model_for_embedding(twins["hf"])
    gg = load_model_for_embedding(twins["gguf"])  # the folder's only .gguf, picked for us
    assert "GGUF" not in capfd.readouterr().err  # transformers' dequantising bar stays off
    # the load's one parse of the file and one name map are its own: gguf is as it was
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == (reader, name_map)
    assert (hf.gguf_file, gg.gguf_file) == (None, "tiny-F32.gguf")
    assert [f.name for f in gg.weight_files] == ["tiny-F32.gguf"]
    assert gg.kind == hf.kind == "hf"
    shape = ("n_states", "max_context", "vocab_size", "width", "n_params")
    assert [getattr(gg, k) for k in shape] == [getattr(hf, k) for k in shape]
    assert gg.special_ids == hf.special_ids == [hf.tokenizer.token_to_id("<|endoftext|>")]
    text = twins["text"].read_text(encoding="utf-8")
    assert gg.tokenizer.encode(text).ids == hf.tokenizer.encode(text).ids

    idx = torch.as_tensor([hf.tokenizer.encode(d).ids[:40] for d in text.split("\n\n")[:3]])
    mask = torch.ones_like(idx, dtype=torch.bool)
    with torch.no_grad():
        a, b = hf.states(idx, mask), gg.states(idx, mask)
    assert len(a) == len(b) == 4
    for x, y in zip(a, b, strict=True):
        torch.testing.assert_close(y, x, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(a[-1][:, 1:], a[-1][:, :-1])  # positions really differ

    points = {k: embed(m, twins["text"], CFG) for k, m in (("hf", hf), ("gg", gg))}
    assert points["hf"].shape == points["gg"].shape and points["hf"].shape[0] >= 1024
    np.testing.assert_allclose(points["gg"], points["hf"], rtol=1e-4, atol=1e-5)
    d = {k: estimate_dimension(x, CFG).d for k, x in points.items()}
    assert d["gg"] == pytest.approx(d["hf"], rel=1e-4)
    assert 2 < d["hf"] < 48
