"""A finished sweep as the steps after it see it: its folder, its runs and runs.csv."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from scalelab.runs.sweep import RunSpec

#: The column of an annealed sweep's table that holds each run's loss before its cooldown.
CONSTANT_LR = "test_loss_constant_lr_nats"


@dataclasses.dataclass(frozen=True, eq=False)
class SweepResult:
    """The runs of one sweep (smallest first), its table (runs.csv, one row per finished run)
    and `size`, the column the exponent is fitted over (`train_tokens`, or
    `params_non_embedding` for a model sweep)."""

    sweep_dir: Path
    specs: tuple[RunSpec, ...]
    table: pd.DataFrame
    size: str

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.specs]

    def ordered(self) -> pd.DataFrame:
        """The table's rows in the order of `specs` (smallest first), indexed by run."""
        return self.table.set_index("run").loc[self.names]

    def curve(self, column: str = "test_loss_nats") -> tuple[np.ndarray, np.ndarray]:
        """(size, test loss in nats, or `column`) of every run, smallest first."""
        rows = self.ordered()
        return rows[self.size].to_numpy(float), rows[column].to_numpy(float)

    def run_dir(self, index: int = -1) -> Path:
        """The run folder of `specs[index]` (default: the largest run)."""
        return self.sweep_dir / "runs" / self.specs[index].name
