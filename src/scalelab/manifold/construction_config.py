"""The config of the constructed-rate experiment (`manifold.construction_rate`): which (d, β),
grids, targets and draws, and how much of the dense pass to run. No torch, so
`scalelab manifold construct --help` reads its defaults without importing it."""

from __future__ import annotations

from dataclasses import dataclass

from scalelab.config import Config, option
from scalelab.errors import ConfigError

TARGETS = ("field", "multiscale")
#: G per axis by d when no grid is given: about √2 apart, from 4 up to where the closed form
#: stays within a few seconds per draw (G^d nodes, a lattice of n_eval points).
DEFAULT_GRIDS: dict[int, tuple[int, ...]] = {
    1: (4, 6, 8, 12, 16, 23, 32, 45, 64, 91, 128, 181, 256, 362, 512, 724, 1024),
    2: (4, 6, 8, 11, 16, 23, 32, 45, 64, 91, 128),
    3: (4, 5, 6, 8, 10, 13, 16, 20, 25),
}
#: Fallback grid for d > 3 (G^d patches grow fast).
SMALL_GRID = (3, 4, 5, 6)


@dataclass(frozen=True)
class ConstructConfig(Config):
    """Dimensions, Hölder exponents, grid (G per axis; empty: `DEFAULT_GRIDS` per d),
    targets (`TARGETS`), field draws per (d, β, target), evaluation points per draw (a
    randomly shifted lattice of about `n_eval` points), and the dense pass: `dense_points`
    points per size wherever heads·l² ≤ `dense_budget` (its cost per point)."""

    dims: tuple[int, ...] = option((2,), "Intrinsic dimensions, e.g. 1,2,3.", flag="--d")
    betas: tuple[float, ...] = option((0.5,), "Hölder exponents in (0, 1].", flag="--beta")
    grid: tuple[int, ...] = option(
        (), "Grid points per axis G (>= 2), e.g. 4,8,16,32 (default: a grid per d)."
    )
    targets: tuple[str, ...] = option(TARGETS, f"Targets: {', '.join(TARGETS)}.")
    draws: int = option(4, "Target draws per (d, β, target).")
    n_eval: int = option(65536, "Evaluation points per draw (a shifted lattice).")
    dense_points: int = option(2, "Points the dense pass runs per size.")
    dense_budget: float = option(
        1.5e8, "Largest heads × tokens² the dense pass runs (its cost per point)."
    )
    seed: int = option(0, "Seed of the target draws and evaluation lattices.")

    def validate(self) -> None:
        if not self.dims or any(not isinstance(d, int) or d < 1 for d in self.dims):
            raise ConfigError("every dimension d must be an integer >= 1; use e.g. 1,2,3")
        if not self.betas or any(not 0.0 < b <= 1.0 for b in self.betas):
            raise ConfigError("the Hölder exponent β must be in (0, 1]; use e.g. 0.5,1")
        if any(not isinstance(g, int) or g < 2 for g in self.grid):
            raise ConfigError("a grid needs G >= 2 points per axis; use e.g. 4,8,16,32")
        unknown = [t for t in self.targets if t not in TARGETS]
        if not self.targets or unknown:
            raise ConfigError(f"unknown target(s) {unknown or '(none)'}; use {', '.join(TARGETS)}")
        if self.draws < 1 or self.n_eval < 16 or self.dense_points < 0:
            raise ConfigError("need draws >= 1, n_eval >= 16 and dense_points >= 0")
        if self.dense_budget < 0:
            raise ConfigError("dense_budget must be >= 0 (0: no dense pass)")

    def grid_for(self, d: int) -> tuple[int, ...]:
        """The G values run at dimension d."""
        return tuple(sorted(set(self.grid))) or DEFAULT_GRIDS.get(d, SMALL_GRID)
