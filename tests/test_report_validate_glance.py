"""The validate page opens with its verdict at a glance: a narrow table of short rows read
from fits.json (checked here on a committed `--preset cpu-regime` summary, whose numbers
docs/benchmarks/scaling.md prints), with the caveat beside the own tiny model's d."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from scalelab.report.validate import OWN_CAVEAT, glance_rows

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
    assert own.startswith("6.36, ") and own.endswith(OWN_CAVEAT)
    assert max(len(q) for q in rows) < 60  # short questions: the table stays narrow


def test_glance_names_a_power_law_and_a_three_way_outcome() -> None:
    passed = fits()
    passed["data"]["regime"]["power_law"] = True
    rows = {r["question"]: r["answer"] for r in glance_rows(passed)}
    assert rows["Is the data curve a power law over its fit range?"] == "POWER LAW"
    assert "Observed data exponent" in rows
    outcome = copy.deepcopy(passed)
    outcome["data"]["regime"]["outcome"] = "UNDECIDED"
    rows = glance_rows(outcome)
    assert rows[0]["answer"] == "UNDECIDED"
