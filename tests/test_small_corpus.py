"""A first run on a small corpus (issue 52): 738 documents, as the held-out corpus that
`--preset quick` refused, get through `validate`'s preparation and `estimate` with their
defaults by taking more positions per test window; a corpus too small even so is refused in
one line and keeps its token store, so the rerun does not tokenise again.

The corpus has the held-out one's 738 documents, each longer than a window (2,000 characters
of standard-library source, about 600 tokens at BPE 512, against 26,000 characters there):
what the rule sees is the number of test documents and that each fills a window, so shorter
documents exercise the same rule at a fraction of the tokenising time."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from scalelab.errors import InputError
from scalelab.io import atomic_write_json
from scalelab.lm.checkpoint import save_weights
from scalelab.lm.model import GPT, GPTConfig
from scalelab.pipeline import PipelineConfig, steps
from scalelab.probe.estimate import EstimateConfig, estimate
from scalelab.probe.sample import (
    Sample,
    TokenDocuments,
    distinct_points,
    same_prefix_points,
    sample_for_batches,
    sample_protocol,
)
from scalelab.text.store import TokenStore

N_DOCUMENTS = 738
DOC_CHARS = 2_000


def source_text(n_chars: int) -> str:
    """Real text: standard-library sources, repeated as needed."""
    import argparse
    import json.decoder
    import pathlib as pl
    import typing

    modules = (argparse, json.decoder, textwrap, typing, pl)
    parts = [pl.Path(m.__file__).read_text(encoding="utf-8") for m in modules]
    text = "\n".join(parts)
    return (text * (n_chars // len(text) + 1))[:n_chars]


def write_jsonl(path: Path, n_documents: int) -> Path:
    text = source_text(n_documents * DOC_CHARS)
    with path.open("w", encoding="utf-8") as f:
        for i in range(n_documents):
            f.write(json.dumps({"text": text[i * DOC_CHARS : (i + 1) * DOC_CHARS]}) + "\n")
    return path


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The 738-document corpus through `validate --preset quick`'s first step."""
    root = tmp_path_factory.mktemp("small")
    corpus = write_jsonl(root / "held-out.jsonl", N_DOCUMENTS)
    cfg = PipelineConfig.from_preset("quick", corpus=str(corpus))
    lines: list[str] = []
    prep = steps.prepare(root / "quick", cfg, say=lines.append)
    return {"root": root, "cfg": cfg, "prep": prep, "lines": lines}


def test_quick_gets_through_by_taking_more_positions_per_window(small: dict) -> None:
    prep, cfg = small["prep"], small["cfg"]
    n_test = TokenStore(prep.data_dir, "test").n_documents
    assert 60 <= n_test <= 90  # about 10% of 738: 32 positions each give < 4,096 points
    assert n_test * cfg.id.per_doc < cfg.id.batch_size
    note = [line for line in small["lines"] if "positions per test window" in line]
    assert len(note) == 1, small["lines"]
    taken = int(note[0].split(":")[1].split()[0])
    # the fewest that give two batches of 4,096 from full 128-token windows
    assert taken == -(-2 * cfg.id.batch_size // n_test)


def test_estimate_with_defaults_gets_two_batches(small: dict) -> None:
    prep = small["prep"]
    store = prep.data_dir
    gpt = GPT(GPTConfig(vocab_size=512, block_size=128, n_layer=1, n_head=2, n_embd=32), seed=0)
    run = small["root"] / "run"
    run.mkdir()
    save_weights(gpt, run / "checkpoint.safetensors")
    atomic_write_json(run / "config.json", {"model": gpt.config.to_dict(), "data_dir": str(store)})
    doc = estimate(run, None, EstimateConfig(dtype="float32"), small["root"] / "est", quiet=True)
    n_test = TokenStore(store, "test").n_documents
    e = doc.estimate
    assert doc.n_batches == 2 and e.batch_size == 4096 and doc.dimension_se is not None
    assert doc.settings["per_doc"] == 32
    assert doc.per_doc_taken == -(-2 * 4096 // n_test)
    assert e.n_points_used == 8192 and e.n_points_left_out < n_test


def test_a_refused_corpus_keeps_its_token_store(
    small: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = small["root"]
    corpus = write_jsonl(root / "tiny.jsonl", 200)  # about 20 test documents: < 4,096 points
    cfg = PipelineConfig.from_preset("quick", corpus=str(corpus))
    out = root / "tiny"
    with pytest.raises(InputError, match="one MLE batch needs 4,096") as refused:
        steps.prepare(out, cfg)
    assert "token store is kept" in str(refused.value)
    assert (out / "data" / "meta.json").is_file() and not (out / "pipeline.json").exists()

    def no_tokenising(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("tokenised again")

    # another corpus in a folder with a kept store does not reuse it
    other = root / "other"
    with pytest.raises(InputError, match="token store is kept"):
        steps.prepare(other, cfg)
    monkeypatch.setattr("scalelab.text.store.prepare_corpus", no_tokenising)
    with pytest.raises(AssertionError, match="tokenised again"):
        steps.prepare(other, small["cfg"])
    # the same corpus with a smaller batch: through, on the kept store
    smaller = PipelineConfig.from_preset("quick", corpus=str(corpus), id_batch_size=1024)
    assert steps.prepare(out, smaller).data_dir == out / "data"


@pytest.mark.parametrize("batch_size", [100, 400, 700, 5000])
def test_positions_per_window_are_the_fewest_that_give_the_batches(batch_size: int) -> None:
    """`sample_for_batches` against a scan of every per_doc: the smallest that gives two
    batches (else one), the default where it suffices, all positions where nothing does; the
    points at a smaller per_doc are among those taken."""
    rng = np.random.default_rng(1)
    docs = TokenDocuments.from_list([rng.integers(0, 50, rng.integers(5, 90)) for _ in range(30)])

    def points(p: int) -> int:  # the distinct ones: the MLE drops a shared prefix's copies
        sample = sample_protocol(docs, context_len=64, per_doc=p, seed=2, special_ids=[0])
        return sample.n_points - len(same_prefix_points(sample)[0])

    sample, taken = sample_for_batches(
        docs, context_len=64, per_doc=8, batch_size=batch_size, seed=2, special_ids=[0]
    )
    counts = {p: points(p) for p in range(8, 65)}
    target = 2 * batch_size if counts[64] >= 2 * batch_size else batch_size
    fits = [p for p, n in counts.items() if n >= target]
    assert taken == (fits[0] if fits else 64) and distinct_points(sample) == counts[taken]
    small = sample_protocol(docs, context_len=64, per_doc=8, seed=2, special_ids=[0])

    def where(s: Sample) -> set[tuple[int, int]]:
        return set(zip(s.positions.window.tolist(), s.positions.offset.tolist(), strict=True))

    assert where(small) <= where(sample)


def test_the_batches_count_distinct_points_not_copies() -> None:
    """Many identical short documents and a few distinct ones: at per_doc 4 the points are
    far more than two batches, but most are copies of one prefix (the MLE drops them), so
    more positions are taken, the fewest that give two batches of distinct points."""
    rng = np.random.default_rng(0)
    same = rng.integers(1, 50, 64)
    texts = [same] * 100 + [rng.integers(1, 50, 64) for _ in range(10)]
    docs = TokenDocuments.from_list(texts)
    kwargs = {"context_len": 64, "batch_size": 60, "seed": 3, "special_ids": [0]}
    sample, taken = sample_for_batches(docs, per_doc=4, **kwargs)
    at4 = sample_protocol(docs, context_len=64, per_doc=4, seed=3, special_ids=[0])
    assert at4.n_points >= 2 * 60 > distinct_points(at4)  # enough points, too few distinct
    fewer = sample_protocol(docs, context_len=64, per_doc=taken - 1, seed=3, special_ids=[0])
    assert taken > 4 and distinct_points(sample) >= 120 > distinct_points(fewer)
    # the copies are what the MLE removes: distinct = rows left after exact deduplication
    ids = np.stack([sample.positions.window, sample.positions.offset], 1)
    prefixes = {
        tuple(sample.window_tokens[sample.window_offsets[w] : sample.window_offsets[w] + o + 1])
        for w, o in ids
    }
    assert len(prefixes) == distinct_points(sample)
