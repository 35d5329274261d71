"""The validate page opens with its verdict at a glance: a narrow table of short rows read
from fits.json (checked here on a committed `--preset cpu-regime` summary, whose numbers
docs/benchmarks/scaling.md prints), with the caveat beside the own tiny model's d."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from scalelab.report.regime import POWER_PRESET, regime_sentence
from scalelab.report.validate import OWN_CAVEAT, glance_rows
from scalelab.sweeps.data import geometric_grid

SUMMARY = (
    Path(__file__).resolve().parents[1] / "docs/benchmarks/cpu-regime/shakespeare/summary.json"
)


def fits() -> dict:
    doc = json.loads(SUMMARY.read_text(encoding="utf-8"))
    return {**doc["fits"], "convergence": doc["convergence"], "sources": doc["sources"]}


def test_glance_of_a_committed_run() -> None:
    rows = {r["question"]: r["answer"] for r in glance_rows(fits())}
    shape = rows["Is the data curve a power law over its fit range?"]
    assert shape.startswith("not shown") and "[-0.18, +0.94]" in shape  # never a bare "no"
    slope = rows["Observed data slope (not an exponent)"]
    assert slope == "0.086 [0.077, 0.094] over 1,320 … 64,000 tokens"
    assert "(the constant by 0.009)" in rows["Closest prediction from d, beside the constant 0.095"]
    assert rows["Convergence check (data sweep)"] == "converged within the check"
    own = rows["d of own reference (largest data-sweep run)"]
    assert own.startswith("6.36, ")  # no model given: the advice to give one
    assert own.endswith(OWN_CAVEAT + "; give a pretrained model with --reference-model")
    given = fits()
    given["sources"].append({**given["sources"][0], "label": "SmolLM2-135M-Instruct.Q4_1"})
    again = {r["question"]: r["answer"] for r in glance_rows(given)}
    assert again["d of own reference (largest data-sweep run)"].endswith(OWN_CAVEAT)
    assert max(len(q) for q in rows) < 60  # short questions: the table stays narrow


def test_glance_names_a_power_law_and_a_three_way_outcome() -> None:
    passed = fits()
    passed["data"]["regime"]["power_law"] = True
    rows = {r["question"]: r["answer"] for r in glance_rows(passed)}
    assert rows["Is the data curve a power law over its fit range?"].startswith(
        "POWER LAW over 9 sizes, 1,320 … 64,000 tokens (1.69 decades)"
    )
    assert "Observed data exponent" in rows
    outcome = copy.deepcopy(passed)
    outcome["data"]["regime"]["outcome"] = "UNDECIDED"
    rows = glance_rows(outcome)
    assert rows[0]["answer"].startswith("UNDECIDED over 9 sizes")


def undecided(fit_sizes: list[float], **plan: object) -> dict:
    """An UNDECIDED regime over the top of a 9-size grid of 500 … 50,000 tokens."""
    sizes = [float(v) for v in geometric_grid(500, 50_000, 9)]
    return {
        "outcome": "UNDECIDED",
        "sizes": sizes,
        "fit_range": {
            "n_points": len(fit_sizes), "x_lo": fit_sizes[0], "x_hi": fit_sizes[-1],
            "decades": 1.0, "lower_reason": "", "upper_reason": "",
        },
        "curvature": {"n_points": len(fit_sizes)},
        "power": {"power": 0.31} if len(fit_sizes) >= 5 else None,
        "plan": plan or None,
    }  # fmt: skip


def test_an_undecided_regime_says_which_options_would_decide_it() -> None:
    sizes = [float(v) for v in geometric_grid(500, 50_000, 9)]
    step = (4.0 - 2.0) / 8  # log10 spacing of the grid
    planned = [*sizes[4:], 50_000 * 10**step, 50_000 * 10 ** (2 * step)]
    chosen = {"seeds": 3, "sizes": planned, "power": 0.84, "added_cpu_s": 5_400.0}
    text = regime_sentence(undecided(sizes[4:], target=0.8, chosen=chosen))
    assert text.startswith("UNDECIDED over 5 sizes, 5,000 … 50,000 tokens (1.00 decades), power")
    assert "--seeds-per-size 3 --max-tokens 158114 --points 11" in text
    assert "power 0.84, ≈ 1.5 CPU-hours more here" in text and text.endswith(POWER_PRESET + ".")
    # the printed options make the planned sizes: validate's grid from --min-tokens 500
    assert geometric_grid(500, 158_114, 11)[4:] == pytest.approx(planned, rel=1e-4)
    none = regime_sentence(undecided(sizes[4:], target=0.8, chosen=None))
    assert "no CPU rerun tried reaches power 80%" in none
    few = regime_sentence(undecided(sizes[5:]))  # 4 sizes in the range: no test
    assert "the test needs 5 sizes in the fit range" in few
    more = int(few.split("--points ")[1].split()[0])
    assert sum(8_891 <= v <= 50_000 for v in geometric_grid(500, 50_000, more)) >= 5
    assert sum(8_891 <= v <= 50_000 for v in geometric_grid(500, 50_000, more - 1)) < 5


def test_the_slope_quoted_names_the_range_it_was_fitted_over() -> None:
    """Issue 52: a slope fitted over every size (the fit range holds too few) must not read
    as the fit range's: the row says which range it is."""
    few = fits()
    few["data"]["x_range"] = [500.0, 5000.0]
    few["data"]["regime"]["fit_range"].update(x_lo=1581.0, x_hi=2812.0, n_points=2)
    rows = {r["question"]: r["answer"] for r in glance_rows(few)}
    slope = rows["Observed data slope (not an exponent)"]
    assert slope.endswith(
        "over 500 … 5,000 tokens (every size: the fit range 1,581 … 2,812 holds 2, too few to fit)"
    )


def test_the_plan_reaches_summary_json_and_the_glance() -> None:
    """The regime test's plan (the same library call `scalelab fit` prints) is saved with the
    regime, as summary.json holds it, and the glance turns it into validate options."""
    import numpy as np

    from scalelab.laws.regime.analysis import analyse_regime
    from scalelab.pipeline.results import Regime

    sizes = np.array(geometric_grid(5_000, 50_000, 5), float)  # one decade: UNDECIDED
    loss = 20 * sizes**-0.1 * np.exp(np.random.default_rng(0).normal(0, 0.004, sizes.size))
    analysis = analyse_regime(sizes, loss, cpu_s=sizes / 1000, n_boot=200, power_sims=40)
    saved = json.loads(json.dumps(Regime(analysis, None, "", None, "", {}).to_dict()))
    assert saved["outcome"] == "UNDECIDED" and saved["plan"]["options"]
    chosen = saved["plan"]["chosen"]
    text = regime_sentence(saved)
    if chosen:  # the options that make the planned sweep, and its cost here
        seeds = f"--seeds-per-size {chosen['seeds']}"
        minutes = round(chosen["added_cpu_s"] / 60)
        amount = f"≈ {minutes} CPU-minute{'' if minutes == 1 else 's'} more here"
        assert (seeds in text) == (chosen["seeds"] != 1) and amount in text
        top = f"--max-tokens {chosen['sizes'][-1]:.0f}"
        assert (top in text) == (len(chosen["sizes"]) > 5)
    else:
        assert "no CPU rerun tried reaches power" in text
