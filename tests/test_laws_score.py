"""Scores of a predictor and of the two baselines, on a toy table worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from scalelab.errors import InputError
from scalelab.laws.compare.baselines import (
    CONSTANT,
    LOO,
    LOO_KIND,
    LOO_MEDIAN,
    baseline_predictions,
    score,
    score_by_kind,
    score_sources,
    spearman_rho,
    verdict,
)
from scalelab.laws.compare.bootstrap import mae_margin, resample_indices, rho_interval

OBSERVED = {"A": 0.08, "B": 0.10, "C": 0.12, "D": 0.06}
PREDICTED = {
    "s": {"A": 0.09, "B": 0.11, "C": 0.10, "D": 0.05},
    "flat": {"A": 0.10, "B": 0.10, "C": None, "D": 0.10},
}


def test_scores_of_a_source_match_the_hand_arithmetic():
    row = score_sources(OBSERVED, PREDICTED)["s"]
    # |errors| 0.01, 0.01, 0.02, 0.01 -> MAE 0.05 / 4; all four within ±0.02 (0.02 included)
    assert row["mae"] == pytest.approx(0.0125)
    assert row["within"] == 4
    # centred p = (.0025, .0225, .0125, -.0375), centred o = (-.01, .01, .03, -.03):
    # slope = 0.0017 / 0.002075, intercept = mean o − slope·mean p = 0.09 − slope·0.0875
    assert row["slope"] == pytest.approx(0.0017 / 0.002075)
    assert row["intercept"] == pytest.approx(0.09 - 0.0017 / 0.002075 * 0.0875)
    # ranks p (2, 4, 3, 1), ranks o (2, 3, 4, 1): Σd² = 2, rho = 1 − 6·2/(4·15) = 0.8
    assert row["rho"] == pytest.approx(0.8)
    assert row["best_baseline"] == CONSTANT
    assert row["margin"] == pytest.approx(0.02 - 0.0125)  # the constant is the best baseline
    # paired gains over the constant .005, -.005, .005, .025: the resample of four copies of
    # B (probability 1/256) and its neighbours put the 2.5% point below 0
    assert row["margin_ci95"][0] < 0 < row["margin_ci95"][1]
    assert row["informative"] is False


def test_baseline_scores_match_the_hand_arithmetic():
    b = score_sources(OBSERVED, PREDICTED)["s"]["baselines"]
    # constant 0.095: |errors| .015, .005, .025, .035 -> MAE 0.02, 2 within, no slope or rho
    assert b[CONSTANT]["mae"] == pytest.approx(0.02)
    assert b[CONSTANT]["within"] == 2
    assert b[CONSTANT]["slope"] is None and b[CONSTANT]["rho"] is None
    # leave-one-out means (0.36 − o)/3 = .28/3, .26/3, .24/3, .30/3;
    # |errors| .04/3, .04/3, .04, .04 -> MAE (0.08/3 + 0.08)/4; o = 0.36 − 3·LOO exactly
    assert b[LOO]["mae"] == pytest.approx((0.08 / 3 + 0.08) / 4)
    assert b[LOO]["within"] == 2
    assert b[LOO]["slope"] == pytest.approx(-3.0)
    assert b[LOO]["intercept"] == pytest.approx(0.36)
    assert b[LOO]["rho"] == pytest.approx(-1.0)


def test_a_source_with_a_gap_is_scored_on_its_corpora_and_can_lose():
    row = score_sources(OBSERVED, PREDICTED)["flat"]
    assert row["corpora"] == ["A", "B", "D"]
    # |errors| .02, 0, .04 -> 0.02; constant .015, .005, .035 -> 0.055/3;
    # leave-one-out (over all four corpora) .04/3, .04/3, .04 -> (0.08/3 + 0.04)/3
    assert row["mae"] == pytest.approx(0.02)
    assert row["baselines"][CONSTANT]["mae"] == pytest.approx(0.055 / 3)
    assert row["baselines"][LOO]["mae"] == pytest.approx((0.08 / 3 + 0.04) / 3)
    assert row["informative"] is False and row["margin"] < 0
    assert row["slope"] is None and row["rho"] is None
    text = verdict(score_sources(OBSERVED, PREDICTED))
    assert "s: MAE 0.0125 on 4" in text and "margin +0.0075, 95% interval [-0.0025" in text
    assert "flat: MAE 0.0200 on 3" in text and "the best baseline that ignores d is the" in text
    assert text.count("not informative: the interval of the margin does not lie above 0") == 2
    assert text.endswith("0 of 2 source(s) beat the best baseline that ignores d with a margin "
                         "whose 95% interval lies above 0.")  # fmt: skip


# Three real corpora: the constant's |errors| .015, .005, .025 (MAE .015) beat the
# leave-one-out mean's and median's .03, 0, .03 (MAE .02; the median of two is their mean).
THREE = {"A": 0.08, "B": 0.10, "C": 0.12}
# straddle: |errors| .025, .003, 0 -> paired gains over the constant -.010, +.002, +.025;
# above: |errors| .005, .001, .005 -> gains +.010, +.004, +.020.
TWO_SOURCES = {
    "straddle": {"A": 0.105, "B": 0.103, "C": 0.12},
    "above": {"A": 0.085, "B": 0.101, "C": 0.115},
}


def test_paired_interval_of_three_corpora_matches_the_enumeration():
    """Of the 27 equally likely resamples of 3 corpora, the lowest mean gain (all three the
    worst corpus) has probability 1/27 > 2.5%, the highest likewise: the 95% interval is
    [min gain, max gain]. Gains -1, 2, 5 (×0.01): the mean is ≤ 0 for (-1,-1,-1) and the 3
    orders of (-1,-1,2): P = 4/27."""
    idx = resample_indices(3)
    got = mae_margin([0.03, 0.01, 0.0], [0.02, 0.03, 0.05], idx)
    assert got["margin"] == pytest.approx(0.02)
    assert got["ci95"] == pytest.approx([-0.01, 0.05])
    assert got["p_not_above_0"] == pytest.approx(4 / 27, abs=0.015)
    up = mae_margin([0.0, 0.0, 0.0], [0.01, 0.02, 0.03], idx)
    assert up["ci95"] == pytest.approx([0.01, 0.03]) and up["p_not_above_0"] == 0.0


def test_a_margin_whose_interval_straddles_0_is_not_informative():
    rows = score_sources(THREE, TWO_SOURCES)
    st, up = rows["straddle"], rows["above"]
    assert st["best_baseline"] == up["best_baseline"] == CONSTANT
    assert st["baselines"][LOO]["mae"] == pytest.approx(0.02)
    assert st["baselines"][LOO_MEDIAN]["mae"] == pytest.approx(0.02)
    # point margin .015 - .028/3 > 0, but the interval is [-.010, +.025] (enumeration as
    # above); the mean of 3 gains from {-10, 2, 25}/1000 is ≤ 0 in 1 + 3 + 3 of 27 resamples
    assert st["margin"] == pytest.approx(0.015 - 0.028 / 3)
    assert st["margin_ci95"] == pytest.approx([-0.010, 0.025])
    assert st["p_not_above_0"] == pytest.approx(7 / 27, abs=0.015)
    assert st["informative"] is False
    assert up["margin_ci95"] == pytest.approx([0.004, 0.020]) and up["informative"] is True
    text = verdict(rows)
    assert "straddle: MAE 0.0093 on 3 corpora" in text
    assert "95% interval [-0.0100, +0.0250], P(margin ≤ 0) = 0.2" in text
    assert "not informative: the interval of the margin does not lie above 0" in text
    assert (
        "above: MAE 0.0037" in text
        and "informative: the interval of the margin lies above 0" in text
    )
    assert text.endswith("1 of 2 source(s) beat the best baseline that ignores d with a "
                         "margin whose 95% interval lies above 0 (above).")  # fmt: skip
    two = score_sources({"A": 0.08, "B": 0.10}, {"s": {"A": 0.08, "B": 0.10}})["s"]
    assert two["margin_ci95"][0] > 0 and two["informative"] is False  # 2 corpora: not judged


# Three real and three synthetic corpora, pooled mean 0.25.
SIX = {"A": 0.08, "B": 0.10, "C": 0.12, "S1": 0.30, "S2": 0.40, "S3": 0.50}
KIND = {"A": "real", "B": "real", "C": "real", "S1": "synthetic", "S2": "synthetic",
        "S3": "synthetic"}  # fmt: skip


def test_kind_aware_baselines_match_the_hand_arithmetic():
    b = baseline_predictions(list(SIX.values()), kinds=list(KIND.values()))
    # pooled (1.5 - o)/5; within kind: real (0.30 - o)/2, synthetic (1.2 - o)/2;
    # median of the five others: .30 for each real corpus, .12 for each synthetic one
    assert b[LOO] == pytest.approx([0.284, 0.28, 0.276, 0.24, 0.22, 0.20])
    assert b[LOO_KIND] == pytest.approx([0.11, 0.10, 0.09, 0.45, 0.40, 0.35])
    assert b[LOO_MEDIAN] == pytest.approx([0.30, 0.30, 0.30, 0.12, 0.12, 0.12])
    row = score_sources(SIX, {"s": SIX}, kinds=KIND)["s"]
    # |errors| within kind .03 0 .03 .15 0 .15 -> .06; pooled .204 .18 .156 .06 .18 .30 ->
    # .18 (n/(n-1) × the distance from .25); median .22 .20 .18 .18 .28 .38 -> .24;
    # constant .015 .005 .025 .205 .305 .405 -> .16
    maes = {k: v["mae"] for k, v in row["baselines"].items()}
    assert maes == pytest.approx({LOO_KIND: 0.06, LOO: 0.18, LOO_MEDIAN: 0.24, CONSTANT: 0.16})
    assert row["best_baseline"] == LOO_KIND and row["margin"] == pytest.approx(0.06)
    alone = baseline_predictions([0.1, 0.2, 0.6], kinds=["real", "real", "synthetic"])
    assert alone[LOO_KIND] == pytest.approx([0.2, 0.1, 0.15])  # alone in its kind: pooled


def test_real_and_synthetic_are_scored_apart_with_their_own_baselines():
    by = score_by_kind(SIX, {"s": {c: v + 0.01 for c, v in SIX.items()}}, KIND)
    assert set(by) == {"all", "real", "synthetic"}
    assert by["real"]["s"]["corpora"] == ["A", "B", "C"]
    # inside the real subset the leave-one-out mean is (0.30 - o)/2 -> MAE .02
    assert by["real"]["s"]["baselines"][LOO]["mae"] == pytest.approx(0.02)
    assert by["synthetic"]["s"]["baselines"][LOO]["mae"] == pytest.approx(0.1)
    assert by["all"]["s"]["baselines"][LOO]["mae"] == pytest.approx(0.18)
    assert "synthetic" not in score_by_kind(THREE, {"s": THREE}, {})


def test_rho_interval_agrees_with_scipy_on_every_resample():
    rng = np.random.default_rng(1)
    p, o = rng.normal(size=8), rng.normal(size=8)
    idx = resample_indices(8, 300, seed=2)
    ref = [spearmanr(p[i], o[i]).statistic for i in idx]
    ref = np.array([r for r in ref if np.isfinite(r)])
    got = rho_interval(p, o, idx)
    assert got["ci95"] == pytest.approx(np.percentile(ref, [2.5, 97.5]))


@pytest.mark.parametrize("seed", range(5))
def test_spearman_rho_agrees_with_scipy_with_ties(seed):
    rng = np.random.default_rng(seed)
    x, y = rng.integers(0, 5, 12).astype(float), rng.normal(size=12)
    assert spearman_rho(x, y) == pytest.approx(spearmanr(x, y).statistic)


def test_bad_tables_are_refused():
    with pytest.raises(InputError, match="at least 2 corpora"):
        baseline_predictions([0.1])
    with pytest.raises(InputError, match="one per corpus"):
        score([0.1, 0.2], [0.1])
    with pytest.raises(InputError, match="finite"):
        score([0.1, float("nan")], [0.1, 0.2])
