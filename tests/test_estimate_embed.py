"""`embed` + `estimate_dimension` give the numbers `estimate` writes, for the same model,
corpus and config: the same points (bit for bit, in the same order) and the same d, for a
Hugging Face folder loaded in bfloat16 (where the two once loaded weights differently) and a
scalelab run folder in float32."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from scalelab.errors import ConfigError
from scalelab.io import atomic_write_json
from scalelab.lm.checkpoint import save_weights
from scalelab.lm.config import GPTConfig
from scalelab.lm.hf import export_gpt_to_hf
from scalelab.lm.model import GPT
from scalelab.probe.estimate import (
    EstimateConfig,
    embed,
    estimate,
    estimate_dimension,
    load_embeddings,
)
from scalelab.text.corpora import load_corpus
from scalelab.text.store import TokenStore, prepare_corpus


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A random GPT saved as a scalelab run folder and as a Hugging Face GPT-2 folder, and the
    text corpus it reads."""
    root = tmp_path_factory.mktemp("embed")
    rng = np.random.default_rng(1)
    letters = list("abcdefghijklmnop")
    lexicon = ["".join(rng.choice(letters, rng.integers(2, 7))) for _ in range(200)]
    docs = [" ".join(rng.choice(lexicon, rng.integers(40, 90))) for _ in range(400)]
    text = root / "corpus.txt"
    text.write_text("\n\n".join(docs), encoding="utf-8")
    store = prepare_corpus(load_corpus(text), root / "store", vocab_size=300, quiet=True)
    gpt = GPT(GPTConfig(vocab_size=300, block_size=64, n_layer=2, n_head=2, n_embd=32), seed=0)
    run = root / "run"
    run.mkdir()
    save_weights(gpt, run / "checkpoint.safetensors")
    atomic_write_json(run / "config.json", {"model": gpt.config.to_dict(), "data_dir": str(store)})
    hf = export_gpt_to_hf(gpt, root / "hf", tokenizer=TokenStore(store, "test").tokenizer())
    return {"root": root, "text": text, "run": run, "hf": hf}


@pytest.mark.parametrize(("kind", "dtype"), [("hf", "bfloat16"), ("run", "float32")])
def test_embed_gives_the_points_and_d_that_estimate_writes(models, kind, dtype) -> None:
    cfg = EstimateConfig(per_doc=16, batch_size=256, dtype=dtype, seed=3)
    out = models["root"] / f"est-{kind}-{dtype}"
    doc = estimate(models[kind], models["text"], cfg, out, device="cpu", quiet=True)
    saved, _ = load_embeddings(out / "embeddings.safetensors")
    points = embed(models[kind], models["text"], cfg, device="cpu")
    assert doc.timing["precision"] == dtype
    assert points.shape == saved.shape and points.shape[0] >= 2 * cfg.batch_size
    assert np.array_equal(points, saved)
    again = estimate_dimension(points, cfg)
    assert again.d == doc.dimension
    assert again.exponents.alpha_D == doc.alpha_D and again.n_batches >= 2


def test_batch_size_ablation_embeds_first_when_given_a_model(models) -> None:
    """`ablate_batch_size(None, ..., model=M)` runs `estimate` into OUT/estimate with batches
    of the smallest size, then the ablation on those embeddings: its row at that size is the
    estimate's own d."""
    from scalelab.probe.ablations import ablate_batch_size

    cfg = EstimateConfig(per_doc=16, batch_size=300, dtype="float32")
    out = models["root"] / "bs"
    doc = ablate_batch_size(
        None, cfg, out, batch_sizes=[512, 256], model=models["run"], corpus=models["text"]
    )
    first = json.loads((out / "estimate" / "estimate.json").read_text())
    assert first["estimate"]["batch_size"] == 256
    assert [r["batch_size"] for r in doc["rows"]] == [256, 512]
    assert doc["rows"][0]["dimension"] == first["dimension"]
    with pytest.raises(ConfigError, match="--embeddings"):
        ablate_batch_size(None, cfg, models["root"] / "none")
