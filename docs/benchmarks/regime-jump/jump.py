"""The cause of the jump (issue: "Something at one size in every corpus"): the cpu-regime
preset at its five sizes around it (5,657 ... 39,397 tokens), then at the three across it
(9,190, 14,929, 24,252 tokens of the same grid) changing one setting at a time.

    python docs/benchmarks/regime-jump/jump.py OUT [CORPUS[:VARIANT,VARIANT...] ...]

Each (corpus, variant) is one resumable data sweep under OUT/<corpus>/<variant>; a finished
variant is skipped, an interrupted one resumes. Without variants a corpus runs all of them, in
the order below (most informative first). `table.py` in this folder rebuilds the table.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from scalelab.pipeline.config import PipelineConfig
from scalelab.pipeline.steps import prepare, run_data_sweep
from scalelab.runs.sweep import Pool
from scalelab.sweeps.schedule import Schedule

#: The cpu-regime preset's schedule, restated so that each variant changes one field of it.
BASE = Schedule(
    patience=20, patience_fraction=0.25, max_epochs=400.0, min_steps=1_000, step_cap=16_000
)
SIZES = {"min_tokens": 5_657, "max_tokens": 39_397, "points": 5}  # the preset's grid there
#: The variants' grid: the three sizes across the jump (14,929 → 24,252), from the same grid.
AROUND = {"min_tokens": 9_190, "max_tokens": 24_252, "points": 3}
VARIANTS: dict[str, dict] = {
    "base": {},
    "width-2x64": {"model": "2x64"},  # 4x the parameters: does the jump move with the model?
    "min-steps-3000": {"schedule": BASE.replace(min_steps=3_000)},  # 3x the floor
    "patience-60": {"schedule": BASE.replace(patience=60)},  # 3x the patience
    "decay": {"train_min_lr": 2e-4},  # the rate decays 10x over each run's step budget
    "eval-10": {"train_eval_interval": 10},  # validations 2.5x as often
}


def run_variant(folder: Path, corpus: str, options: dict) -> None:
    """One resumable cpu-regime data sweep of `corpus` with `options` on top, in `folder`."""
    options = {"corpus": corpus, **options}
    # python-stdlib's test split holds 2,528 points for d at BPE 320; the study measures no
    # d, but prepare checks a batch fits, so the batch is halved there
    options |= {"id_batch_size": 2048} if corpus == "python-stdlib" else {}
    prep = prepare(folder, PipelineConfig.from_preset("cpu-regime", **options))
    data = run_data_sweep(prep, Pool(workers=1), say=print)
    data.table.to_csv(folder / "runs.csv", index=False)
    print(f"== {folder} done", flush=True)


def main(out: Path, corpora: list[str]) -> None:
    torch.set_num_threads(1)
    for item in corpora:
        corpus, _, names = item.partition(":")
        for name in names.split(",") if names else VARIANTS:
            sizes = SIZES if name == "base" else AROUND
            run_variant(out / corpus / name, corpus, {**sizes, **VARIANTS[name]})


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:] or ["shakespeare", "python-stdlib:base,width-2x64"])
