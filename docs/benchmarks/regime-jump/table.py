"""The jump's table from the study's folders: per corpus and variant, the test loss and best
step at each size and the local slope across the jump (14,929 → 24,252 tokens).

    python docs/benchmarks/regime-jump/table.py OUT

Prints Markdown and writes docs/benchmarks/regime-jump/table.csv.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd

from scalelab.io import atomic_write

LO, HI = 14_929, 24_252


def rows(out: Path) -> list[dict]:
    found = []
    for runs in sorted(out.glob("*/*/runs.csv")):
        t = pd.read_csv(runs).set_index("train_tokens")
        corpus, variant = runs.parent.parent.name, runs.parent.name
        row = {"corpus": corpus, "variant": variant}
        for n in (9_190, LO, HI):
            if n in t.index:
                row[f"loss {n}"] = round(float(t.loc[n, "test_loss_nats"]), 4)
                row[f"best step {n}"] = int(t.loc[n, "best_step"])
                row[f"steps {n}"] = int(t.loc[n, "steps"])
        if LO in t.index and HI in t.index:
            a, b = t.loc[LO, "test_loss_nats"], t.loc[HI, "test_loss_nats"]
            row["slope across"] = round(math.log(a / b) / math.log(HI / LO), 3)
        if 9_190 in t.index and LO in t.index:
            a, b = t.loc[9_190, "test_loss_nats"], t.loc[LO, "test_loss_nats"]
            row["slope before"] = round(math.log(a / b) / math.log(LO / 9_190), 3)
        row["params"] = int(t["params"].iloc[0])
        found.append(row)
    return found


def main(out: Path) -> None:
    table = pd.DataFrame(rows(out))
    atomic_write(Path(__file__).with_name("table.csv"), lambda p: table.to_csv(p, index=False))
    cols = list(table.columns)
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for row in table.itertuples(index=False):
        print("| " + " | ".join("" if pd.isna(v) else str(v) for v in row) + " |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
