"""Heads seen forming: the attention probabilities the model exposes are the ones its fused
forward pass uses; the scores read the hand-set construction's heads right (layer 1 a
previous-token head, layer 2 an induction head); a short two-layer attention-only run
passes an induction-score threshold that the one-layer run of equal size does not."""

import numpy as np
import torch

from scalelab.induction.config import InductionConfig
from scalelab.induction.construction import two_layer_construction
from scalelab.induction.formation import (
    FormationConfig,
    _answer_keys,
    head_scores,
    matched_width,
    n_params,
    run_formation,
)
from scalelab.induction.model import InductionTransformer
from scalelab.induction.task import uniform_instances


def test_attention_probs_reproduce_the_fused_forward_pass() -> None:
    torch.manual_seed(0)
    model = InductionTransformer(InductionConfig(alphabet_size=5, max_len=12, n_head=2))
    seqs = torch.from_numpy(uniform_instances(4, 12, 5, np.random.default_rng(0)))
    probs = model.attention_probs(seqs)
    assert len(probs) == 2 and probs[0].shape == (4, 2, 13, 13)
    torch.testing.assert_close(probs[0].sum(-1), torch.ones(4, 2, 13))
    assert float(probs[0].triu(1).abs().max()) == 0.0  # causal
    block = model.blocks[0]
    x = model.embed(model.with_bos(seqs))
    _, _, v = block.attn.project(block.ln1(x))
    torch.testing.assert_close(block.attn.output(probs[0] @ v), block.attn(block.ln1(x)))


def test_answer_keys_by_hand() -> None:
    # σ = a b a c b a: position 2 (a) → 0 + 1; 4 (b) → 1 + 1; 5 (a) → 2 + 1
    keys = _answer_keys(np.array([[0, 1, 0, 2, 1, 0]]))
    assert keys.tolist() == [[-1, -1, 1, -1, 2, 3]]


def test_scores_find_the_constructions_two_heads() -> None:
    seqs = uniform_instances(32, 24, 6, np.random.default_rng(1))
    scores = head_scores(two_layer_construction(6, 24), seqs)
    (prev1,), (prev2,) = scores["previous_token"]
    (ind1,), (ind2,) = scores["induction"]
    assert prev1 > 0.999 and ind2 > 0.999  # the hand-set heads, found
    assert prev2 < 0.5 and ind1 < 0.5


def test_one_layer_width_matches_the_parameter_count() -> None:
    cfg = FormationConfig()
    w = matched_width(cfg)
    two = n_params(cfg.model_config(2))
    assert w % cfg.n_head == 0 and abs(n_params(cfg.model_config(1, w)) - two) < 0.03 * two


def test_two_layers_pass_the_induction_threshold_one_layer_does_not(tmp_path) -> None:
    cfg = FormationConfig(
        n=16,
        alphabet_size=4,
        n_embd=32,
        max_steps=300,
        eval_interval=50,
        seeds=(0,),
        score_samples=64,
        eval_samples=128,
        threshold=0.4,
    )
    doc = run_formation(cfg, tmp_path)
    by_depth = {r["n_layer"]: r for r in doc["runs"]}
    assert by_depth[2]["final_induction_max"] > cfg.threshold
    assert by_depth[2]["formed_at"] is not None and by_depth[2]["final_acc_hard"] > 0.9
    assert by_depth[1]["final_induction_max"] < cfg.threshold
    assert by_depth[1]["formed_at"] is None and by_depth[1]["final_acc_hard"] < 0.75
