"""Scores of a predictor and of the two baselines, on a toy table worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from scalelab.errors import InputError
from scalelab.laws.score import (
    CONSTANT,
    LOO,
    baseline_predictions,
    score,
    score_sources,
    spearman_rho,
    verdict,
)

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
    assert row["informative"] is True
    assert row["margin"] == pytest.approx(0.02 - 0.0125)  # the constant is the better baseline


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
    assert row["informative"] is False
    assert row["slope"] is None and row["rho"] is None
    text = verdict(score_sources(OBSERVED, PREDICTED))
    assert (
        "s: MAE 0.0125 on 4" in text and "informative: beats the better baseline by 0.0075" in text
    )
    assert (
        "flat: MAE 0.0200 on 3" in text and "not informative: it does not beat the constant" in text
    )
    assert text.endswith("1 of 2 source(s) beat both baselines that ignore the corpus (s).")


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
