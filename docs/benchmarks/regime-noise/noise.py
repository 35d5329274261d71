"""What annealing and more validation batches do to the noise and the shape of the data sweep
(issue: "cut the noise of each run ... measure each one, paired"): the cpu-regime preset at its
four sizes from 14,929 to 64,000 tokens, three seeds per size, in two variants.

    python docs/benchmarks/regime-noise/noise.py OUT [CORPUS[:VARIANT,...] ...]

- `base`: the preset as committed (constant rate 0.002, early stopping on 8 validation
  batches), each run then annealed from its best step to rate 0 over 20% of the steps to it
  (`Schedule.cooldown_fraction`, the `-cool` runs): the constant-rate and the annealed loss of
  the same run, paired.
- `eval-32`: the same runs with 32 validation batches per evaluation (early stopping reads a
  4x larger sample), same seeds: paired with `base`'s constant-rate runs.

Each (corpus, variant) is one resumable data sweep under OUT/<corpus>/<variant>; `table.py`
in this folder reads them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "regime-jump"))
# the jump study's runner and its restated cpu-regime schedule: same preset, same loop
from jump import BASE, run_variant

SIZES = {"min_tokens": 14_929, "max_tokens": 64_000, "points": 4, "seeds_per_size": 3}
VARIANTS: dict[str, dict] = {
    "base": {"schedule": BASE.replace(cooldown_fraction=0.2)},
    "eval-32": {"schedule": BASE, "train_eval_batches": 32},
}


def main(out: Path, corpora: list[str]) -> None:
    torch.set_num_threads(1)
    for item in corpora:
        corpus, _, names = item.partition(":")
        for name in names.split(",") if names else VARIANTS:
            run_variant(out / corpus / name, corpus, {**SIZES, **VARIANTS[name]})


if __name__ == "__main__":
    main(
        Path(sys.argv[1]),
        sys.argv[2:]
        or [
            "shakespeare:base",
            "python-stdlib:base",
            "shakespeare:eval-32",
            "python-stdlib:eval-32",
        ],
    )
