"""Reference levels of a store's test split, checked by hand: the unigram entropy of the
scored test tokens (and the fit range it starts), and the facts family's exact floor per
token of the store's own tokenizer."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from scalelab.errors import InputError
from scalelab.laws.regime.rules import fit_range
from scalelab.lm.data import tiling_starts, windows
from scalelab.text import synth
from scalelab.text.corpora import load_corpus
from scalelab.text.floors import (
    facts_store_theory,
    scored_test_tokens,
    store_unigram_entropy,
    unigram_entropy,
)
from scalelab.text.store import FORMAT, Store, TokenStore, prepare_corpus
from scalelab.text.synth_theory import zipf_probabilities

TEST_TOKENS = [0, 1, 1, 2, 1, 1, 3, 0, 1]  # two documents: [0 1 1 2] [1 1 3 0 1]


def toy_store(folder: Path) -> Path:
    """A store written by hand: only its test split, 9 tokens in two documents."""
    folder.mkdir()
    np.asarray(TEST_TOKENS, np.uint16).tofile(folder / "test.bin")
    np.save(folder / "test.offsets.npy", np.array([0, 4, 9], np.int64))
    split = {
        "n_documents": 2,
        "n_tokens": 9,
        "tokens_file": "test.bin",
        "offsets_file": "test.offsets.npy",
        "names_file": "test.names.json",
    }
    meta = {"format": FORMAT, "dtype": "uint16", "vocab_size": 4, "splits": {"test": split}}
    (folder / "meta.json").write_text(json.dumps(meta))
    return folder


def h(*counts: int) -> float:
    total = sum(counts)
    return -sum(c / total * math.log(c / total) for c in counts)


def test_unigram_entropy_of_the_toy_store_by_hand(tmp_path: Path) -> None:
    store = toy_store(tmp_path / "s")
    assert store_unigram_entropy(store) == pytest.approx(h(2, 5, 1, 1))  # all 9 tokens
    # context 4: windows at 0 and 4 score tokens 1..8 = 1 1 2 1 1 3 0 1
    assert store_unigram_entropy(store, block_size=4) == pytest.approx(h(5, 1, 1, 1))
    # at most 5 test tokens: one window, targets 1 1 2 1
    assert store_unigram_entropy(store, 4, test_tokens=5) == pytest.approx(h(3, 1))
    assert unigram_entropy(np.array([7, 7, 7])) == 0.0
    with pytest.raises(InputError, match="context length"):
        scored_test_tokens(store, block_size=9)


@pytest.mark.parametrize(("block", "limit"), [(2, None), (3, None), (4, 5), (8, None)])
def test_scored_tokens_are_the_targets_the_trainer_scores(
    tmp_path: Path, block: int, limit: int | None
) -> None:
    store = toy_store(tmp_path / "s")
    tokens = TokenStore(store, "test").tokens
    _, targets = windows(tokens, tiling_starts(len(tokens), block, limit), block)
    assert scored_test_tokens(store, block, limit).tolist() == targets.flatten().tolist()


def test_unigram_threshold_starts_the_fit_range_on_the_toy_store(tmp_path: Path) -> None:
    entropy = store_unigram_entropy(toy_store(tmp_path / "s"), block_size=4)
    assert entropy == pytest.approx(1.0735, abs=1e-4)  # (5/8)ln(8/5) + (3/8)ln 8 = 1.07354
    sizes = [10, 20, 40, 80, 160]
    losses = [1.30, 1.00, 0.97, 0.60, 0.40]  # 0.97 is the first below 1.0735 − 0.1 = 0.9735
    r = fit_range(sizes, losses, unigram_entropy=entropy, margin=0.1)
    assert (r.x_lo, r.x_hi) == (40, 160)


def test_facts_floor_per_token_of_the_stores_own_tokenizer(tmp_path: Path) -> None:
    spec = "synth:facts:a=1.0,words=4,key_len=2,value_len=2,facts_per_doc=4,tokens=6000"
    cfg = synth.parse_spec(spec)
    store = prepare_corpus(load_corpus(spec), tmp_path / "store", vocab_size=262, quiet=True)
    test = TokenStore(store, "test")
    tok = test.tokenizer()
    texts = [d.text for d in load_corpus(spec).documents]
    names = test.document_names()
    n_tokens = sum(len(tok.encode(texts[int(name)]).ids) + 1 for name in names)
    p = zipf_probabilities(2.0, 16)
    floor = len(names) * 4 * float(-(p * np.log(p)).sum()) / n_tokens
    th = facts_store_theory(store)
    assert n_tokens == test.n_tokens
    assert th.irreducible_nats_per_token == pytest.approx(floor, rel=1e-9)
    # a word is more than one token at this vocabulary: more tokens per fact than symbols
    assert th.tokens_per_fact > cfg.theory().tokens_per_fact


def test_facts_floor_refuses_a_store_of_another_corpus(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a synthetic facts corpus"):
        facts_store_theory(toy_store(tmp_path / "s"))


def test_regime_step_checks_the_facts_capacity_of_the_model_at_the_range_top(
    tmp_path: Path,
) -> None:
    from types import SimpleNamespace

    import pandas as pd

    from scalelab.pipeline.config import PipelineConfig
    from scalelab.pipeline.steps import regime
    from scalelab.runs.sweep import RunSpec
    from scalelab.sweeps.result import SweepResult

    spec = "synth:facts:a=1.0,words=4,key_len=2,value_len=2,facts_per_doc=4,tokens=6000"
    store = prepare_corpus(load_corpus(spec), tmp_path / "store", vocab_size=262, quiet=True)
    sizes = [100, 200, 400, 800]
    names = [f"n{n:010d}" for n in sizes]
    table = pd.DataFrame(
        {
            "run": names,
            "train_tokens": sizes,
            "test_loss_nats": [1.2, 1.0, 0.9, 0.85],
            "stop_reason": ["patience"] * 3 + ["max_steps"],  # the top run is budget-ended
            "params": [10, 20, 30, 40],
        }
    )
    data = SweepResult(tmp_path, tuple(RunSpec(n) for n in names), table, "train_tokens")
    cfg = PipelineConfig()
    entropy = store_unigram_entropy(store, cfg.train.block_size, cfg.train.test_tokens)
    prep = SimpleNamespace(cfg=cfg, data_dir=store, store=Store(store), unigram_entropy=entropy)
    cap = regime(prep, data, []).capacity  # type: ignore[arg-type]
    th = facts_store_theory(store)
    # the range stops below the budget-ended run: its top is 400 tokens, a 30-parameter model
    assert (cap["train_tokens"], cap["params"]) == (400, 30)
    assert cap["bits_needed"] == pytest.approx(th.distinct_facts(400) * 2 * 2)  # 2 words, 2 bits
    assert cap["holds"] is (cap["bits_needed"] <= 2 * 30)


def test_the_check_starts_at_the_fit_ranges_lower_end(tmp_path: Path) -> None:
    """The data check perturbs the smallest run *of the fitted range*: the sweep it is given
    starts at the first run 0.1 nats below the unigram entropy (1.0735 at context 4)."""
    import dataclasses
    from types import SimpleNamespace

    import pandas as pd

    from scalelab.pipeline.config import PipelineConfig
    from scalelab.pipeline.steps import from_range_start
    from scalelab.runs.sweep import RunSpec
    from scalelab.sweeps.result import SweepResult

    store = toy_store(tmp_path / "s")
    cfg = PipelineConfig()
    cfg = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, block_size=4))
    names = ["a", "b", "c", "d"]
    table = pd.DataFrame({"run": names, "train_tokens": [10, 20, 40, 80],
                          "test_loss_nats": [1.30, 1.00, 0.97, 0.60]})  # fmt: skip
    data = SweepResult(tmp_path, tuple(RunSpec(n) for n in names), table, "train_tokens")
    entropy = store_unigram_entropy(store, 4, cfg.train.test_tokens)
    prep = SimpleNamespace(cfg=cfg, data_dir=store, store=Store(store), unigram_entropy=entropy)
    got = from_range_start(prep, data)  # type: ignore[arg-type]
    assert got.names == ["c", "d"] and list(got.table["run"]) == ["c", "d"]
    # no run below the threshold: the whole sweep (the regime verdict reports the empty range)
    high = dataclasses.replace(data, table=table.assign(test_loss_nats=[2.0, 1.9, 1.8, 1.7]))
    assert from_range_start(prep, high).names == names  # type: ignore[arg-type]


def test_the_observed_data_exponent_is_fitted_over_the_fit_range(tmp_path: Path) -> None:
    """`steps.fit` fits the data side over the fit range by rule: the 10-token run, above
    the unigram entropy (1.0735 at context 4) by less than 0.1 nats, is left out."""
    import dataclasses
    from types import SimpleNamespace

    import pandas as pd

    from scalelab.laws.fit.power_law import fit_power_law
    from scalelab.pipeline.config import PipelineConfig
    from scalelab.pipeline.steps import fit
    from scalelab.runs.sweep import RunSpec
    from scalelab.sweeps.result import SweepResult

    cfg = PipelineConfig()
    cfg = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, block_size=4), n_boot=50)
    sizes, loss = [10, 20, 40, 80, 160], [1.30, 0.95, 0.80, 0.70, 0.62]
    names = [f"n{n}" for n in sizes]
    table = pd.DataFrame({"run": names, "train_tokens": sizes, "test_loss_nats": loss,
                          "stop_reason": "patience", "params": 10})  # fmt: skip
    data = SweepResult(tmp_path, tuple(RunSpec(n) for n in names), table, "train_tokens")
    store = toy_store(tmp_path / "s")
    entropy = store_unigram_entropy(store, 4, cfg.train.test_tokens)
    prep = SimpleNamespace(cfg=cfg, data_dir=store, store=Store(store), unigram_entropy=entropy)
    got = fit(prep, data, None, [], None).data  # type: ignore[arg-type]
    assert got.x_range == (20, 160)
    expected = fit_power_law(sizes[1:], loss[1:], n_boot=50, seed=cfg.seed)
    assert got.power.exponent == pytest.approx(expected.exponent)
