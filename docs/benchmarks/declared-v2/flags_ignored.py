"""Declaration v2's table scored as if no observation were flagged: NOT its verdict (every
observation is left out by the declared rule), only what the flags keep out of it.

    python docs/benchmarks/declared-v2/flags_ignored.py   # from the repository root
"""

import json
from pathlib import Path

from scalelab.laws.compare.baselines import fmt_interval, judged, score_by_kind
from scalelab.pipeline.many import PLAIN

rows = json.loads((Path(__file__).parent / "table.json").read_text())
plain = [r for r in rows if r["observable"] == PLAIN and r["observed_alpha_D"] is not None]
observed = {r["corpus"]: r["observed_alpha_D"] for r in plain}
kinds = {r["corpus"]: r["kind"] for r in plain}
predicted: dict[str, dict[str, float]] = {}
for r in plain:
    predicted.setdefault(r["source"], {})[r["corpus"]] = r["predicted_alpha_D"]
HEAD = "corpora", "source", "n", "MAE [95%]", "best baseline (MAE)", "margin [95%]", "rho [95%]"
print("| " + " | ".join((*HEAD, "verdict")) + " |")
print("|---|---|---|---|---|---|---|---|")
for kind, scores in score_by_kind(observed, predicted, kinds).items():
    for source, s in scores.items():
        best = s["baselines"][s["best_baseline"]]["mae"]
        rho = "n/a" if s["rho"] is None else f"{s['rho']:.2f} {fmt_interval(s['rho_ci95'], 2)}"
        print(
            f"| {kind} | {source} | {s['n']} | {s['mae']:.3f} {fmt_interval(s['mae_ci95'])} | "
            f"{s['best_baseline']} ({best:.3f}) | {s['margin']:+.3f} "
            f"{fmt_interval(s['margin_ci95'], sign=True)} | {rho} | {judged(s)} |"
        )
