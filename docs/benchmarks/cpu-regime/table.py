"""The cpu-regime preset's results, one row per corpus, from the summaries in this folder.

python docs/benchmarks/cpu-regime/table.py     # from the repository root
"""

import json
from pathlib import Path


def fmt(ci: list[float | None], digits: int = 3) -> str:
    return "" if None in ci else f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def row(name: str, s: dict) -> str:
    r = s["fits"]["data"]["regime"]
    rng, curv, plain, ex = r["fit_range"], r["curvature"], r["plain"], r["excess"]
    check = s["convergence"]["data"]
    flags = ", ".join(check["labels"]) or "converged"
    if rng["n_points"]:
        where = f"{rng['x_lo']:,.0f} … {rng['x_hi']:,.0f} ({rng['decades']:.2f}, {rng['n_points']})"
    else:
        where = f"none: {rng['lower_reason']}"
    excess = (
        f"{ex['exponent']:.3f} {fmt(ex['exponent_ci95'])} (E {ex['E']:.3f}, {ex['E_source'][:5]})"
        if ex and ex["exponent"] is not None
        else "not estimable (E at its bound)"
        if ex
        else ""
    )
    change = (
        f"{curv['relative_change']:+.2f} {fmt(curv['relative_change_interval'], 2)}" if curv else ""
    )
    slope = f"{plain['exponent']:.3f} {fmt(plain['exponent_ci95'])}" if plain else ""
    calls = s.get("invocations") or [s]  # a resumed folder: every invocation's time
    time = f"{sum(c['wall_s'] for c in calls):,.0f} / {sum(c['cpu_s'] for c in calls):,.0f}"
    return (
        f"| {name} | {'**power law**' if r['power_law'] else 'no regime'} | {where} | "
        f"{change} | {slope} | {excess} | "
        f"{flags}; systematic {fmt(check['systematic_interval'])} | {time} |"
    )


if __name__ == "__main__":
    here = Path(__file__).parent
    print(
        "| corpus | regime | fit range (decades, sizes) | curvature: relative change "
        "[90%] | plain slope [95%] | excess exponent [95%] | check | wall / CPU s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for path in sorted(here.glob("*/summary.json")):
        print(row(path.parent.name, json.loads(path.read_text())))
