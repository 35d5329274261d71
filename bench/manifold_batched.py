"""Many small regressors trained together (`manifold.batched`) against one at a time.

    python bench/manifold_batched.py                 # 10 and 4 models, 300 steps, 2 repeats
    python bench/manifold_batched.py --steps 100 --repeats 1

The `theorem` preset's regressor (Definition 1, ReLU attention, 2 blocks x 4 heads, width 32,
D = 16 tokens, batch 64), each model on its own sample, trained by the fixed-schedule rule
(`train.fit_schedule` alone, `batched.fit_members_schedule` together) in one process on one
torch thread, alternated (alone, together, alone, together, ...), best of the repeats. Prints
seconds per step for each way, the ratio (alone / together: > 1 means together pays), and the
largest relative difference of the members' validation losses and weights between the two
(they should agree to float tolerance). The 1-minute load average is printed before and
after: on a loaded machine read the ratio, not the seconds.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from scalelab.manifold.batched import Member, fit_members_schedule
from scalelab.manifold.config import ScheduleConfig
from scalelab.manifold.model import TransformerRegressor
from scalelab.manifold.plan import MANIFOLD_PRESETS
from scalelab.manifold.train import epoch_batches, fit_schedule


def _setup(size: int, n: int) -> tuple[list[Member], list[dict]]:
    rng = np.random.default_rng(0)
    members = []
    for _ in range(size):
        x, xv = rng.standard_normal((n, 16)), rng.standard_normal((512, 16))
        members.append(Member(x, np.sin(x[:, 0]), xv, np.sin(xv[:, 0])))
    reg = MANIFOLD_PRESETS["theorem"].regressor()
    inits = []
    for e in range(size):
        torch.manual_seed(e)
        inits.append(TransformerRegressor(reg).state_dict())
    return members, inits


def _models(inits: list[dict]) -> list[TransformerRegressor]:
    reg = MANIFOLD_PRESETS["theorem"].regressor()
    models = []
    for state in inits:
        model = TransformerRegressor(reg)
        model.load_state_dict(state)
        models.append(model)
    return models


def _alone(members: list[Member], inits: list[dict], cfg: ScheduleConfig) -> tuple:
    models, vals = _models(inits), []
    t0 = time.perf_counter()
    for e, (model, m) in enumerate(zip(models, members, strict=True)):
        batches = epoch_batches(
            m.x_train, m.y_train, cfg.batch_size, torch.Generator().manual_seed(e)
        )
        vals.append(fit_schedule(model, batches, m.x_val, m.y_val, cfg)["val_mse"])
    return time.perf_counter() - t0, vals, models


def _together(members: list[Member], inits: list[dict], cfg: ScheduleConfig) -> tuple:
    models = _models(inits)
    gens = [torch.Generator().manual_seed(e) for e in range(len(models))]
    t0 = time.perf_counter()
    vals = [r["val_mse"] for r in fit_members_schedule(models, members, cfg, gens)]
    return time.perf_counter() - t0, vals, models


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--sizes", default="10,4", help="models trained together")
    args = parser.parse_args()
    torch.set_num_threads(1)
    cfg = ScheduleConfig(lr=2e-3, batch_size=64, max_steps=args.steps, n_evals=5)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    for size in (int(s) for s in args.sizes.split(",")):
        members, inits = _setup(size, 2048)
        alone, together = [], []
        for _ in range(args.repeats):
            t_a, v_a, m_a = _alone(members, inits, cfg)
            t_b, v_b, m_b = _together(members, inits, cfg)
            alone.append(t_a)
            together.append(t_b)
        loss_diff = max(abs(a - b) / a for a, b in zip(v_a, v_b, strict=True))
        weight_diff = max(
            float((p - q).detach().abs().max())
            for ma, mb in zip(m_a, m_b, strict=True)
            for p, q in zip(ma.parameters(), mb.parameters(), strict=True)
        )
        per_step_a = min(alone) / (size * args.steps) * 1e3
        per_step_b = min(together) / (size * args.steps) * 1e3
        print(
            f"{size} models x {args.steps} steps: alone {per_step_a:.2f} ms per model-step, "
            f"together {per_step_b:.2f} ms; ratio alone/together {min(alone) / min(together):.2f}; "
            f"largest relative val-loss difference {loss_diff:.1e}, "
            f"weight difference {weight_diff:.1e}"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
