"""Test loss by context position in the runs on either side of the jump: what forms there?

    python docs/benchmarks/regime-jump/positions.py OUT/shakespeare/base

Each run's tested weights score the same 400 test windows of 128 tokens (seeded); the loss at
position t predicts token t from tokens < t. A model that learns to use its context loses
more at late positions than at early ones. Prints the mean loss in position bands per run and
writes positions.json beside this script.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch

from scalelab.io import atomic_write_json
from scalelab.probe.heads import load_scored_model
from scalelab.text.store import TokenStore

BANDS = ((1, 4), (4, 16), (16, 64), (64, 128))
WINDOWS, SEED = 400, 0


def position_loss(run: Path, tokens: np.ndarray, starts: np.ndarray) -> np.ndarray:
    model = load_scored_model(run)
    x = torch.from_numpy(np.stack([tokens[s : s + 128] for s in starts]).astype(np.int64))
    out = []
    with torch.no_grad():
        for i in range(0, len(x), 50):
            xb = x[i : i + 50]
            logp = torch.log_softmax(model.logits(xb)[:, :-1].double(), dim=-1)
            out.append(-logp.gather(-1, xb[:, 1:, None])[..., 0])
    return torch.cat(out).mean(0).numpy()  # [127]: position t = 1 … 127


def main(sweep: Path) -> None:
    torch.set_num_threads(1)
    tokens = TokenStore(sweep / "data", "test").tokens
    starts = np.random.default_rng(SEED).integers(0, len(tokens) - 129, WINDOWS)
    rows = {}
    for run in sorted((sweep / "sweep" / "runs").iterdir()):
        loss = position_loss(run, np.asarray(tokens), starts)
        bands = {f"{a}-{b - 1}": float(loss[a - 1 : b - 1].mean()) for a, b in BANDS}
        rows[run.name] = {"bands": bands, "late_minus_early": bands["64-127"] - bands["4-15"]}
        print(run.name, json.dumps(rows[run.name]), flush=True)
    atomic_write_json(Path(__file__).with_name("positions.json"), rows)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
