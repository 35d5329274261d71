"""The three-outcome regime test and its power on the committed cpu-regime sweeps, from their
summary.json files (no training): the same inputs validate gave the old pass/fail test.

    python docs/benchmarks/regime-outcomes/reanalyse.py [SUMMARY.json ...]

Writes docs/benchmarks/regime-outcomes/cpu-regime.json and prints one row per corpus.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from scalelab.io import atomic_write_json, to_json
from scalelab.laws.regime.analysis import analyse_regime

HERE = Path(__file__).parent
DEFAULT = sorted((HERE.parent / "cpu-regime").glob("*/summary.json"))


def reanalyse(path: Path) -> dict:
    summary = json.loads(path.read_text(encoding="utf-8"))
    old = summary["fits"]["data"]["regime"]
    runs = {r["run"]: r["train_tokens"] for r in summary["runs"]}
    limited_sizes = {runs[name] for name in old["limited_runs"]}
    x = np.asarray(old["sizes"], dtype=float)
    a = analyse_regime(
        x,
        np.asarray(old["losses"], dtype=float),
        unigram_entropy=old["unigram_entropy_nats"],
        limited=[s in limited_sizes for s in x],
        floor=old["floor_nats"],
        floor_source="given" if old["floor_nats"] is not None else "power+E",
        n_boot=summary["config"]["n_boot"],
        seed=summary["config"]["seed"],
    )
    test, rng = a.curvature, a.fit_range
    row = {
        "corpus": path.parent.name,
        "old verdict": "power law" if old["power_law"] else "no power-law regime",
        "outcome": a.outcome,
        "power": None if a.power is None else a.power.power,
        "range": "none" if rng.empty else f"{rng.x_lo:,.0f} … {rng.x_hi:,.0f}",
        "decades": rng.decades,
        "sizes": rng.n_points,
        "relative change": None if test is None else test.relative_change_interval,
        "noise_log": None if test is None else test.noise_log,
        "plain": None if a.plain is None else [a.plain.exponent, *a.plain.exponent_ci95],
        "excess outcome": a.excess_outcome,
        "to decide": None if a.plan is None else a.plan.words(),
    }
    return {"row": row, "analysis": json.loads(to_json(a.to_dict()))}


def main(paths: list[Path]) -> None:
    out = [reanalyse(p) for p in paths]
    atomic_write_json(HERE / "cpu-regime.json", out)
    for item in out:
        print(json.dumps(item["row"]))


if __name__ == "__main__":
    main([Path(p) for p in sys.argv[1:]] or DEFAULT)
