"""The constructed transformer's approximation rate: squared L2 error of the Lemma-1
network (`manifold.construction`) against its parameter count, beside α_N = 2β/d.

Per (d, β, target) and field draw, every G of the grid: the grid values f_n, the closed form
f̂ on a randomly shifted lattice of ≈ `n_eval` points (an unbiased estimate of the L2 error),
the sup error there against Lemma 1's bound 2^d d^β H (G − 1)^-β and the sharper
H (√d·2/(3(G − 1)))^β that a partition of unity with bumps of radius 2/3 of a cell gives.
Where heads·l² ≤ `dense_budget`, the dense network runs on `dense_points` of those points in
float64 and float32, and must agree with the closed form to 1e-6 in float64.

Targets on [0, 1]^d, with Hölder constant H and bound R in u-coordinates:
- ``field``: `manifold.field.TorusField` (β-Gaussian field on T^d, capped at |k| ≤ K) with
  angles θ = 2πu − π; H = 2^(1−β) Σ |a_k| (2π|k|)^β. Read on lattices by an FFT (exact:
  sampling folds the modes k mod M), so K can be large: `FIELD_CAP`.
- ``multiscale``: `manifold.targets.HolderTarget` (random frequencies in geometric shells
  from 1 to 2^13 cycles, amplitudes ∝ r^-β): rough at every scale a grid here resolves.

Where the rate is expected (declared from a one-draw pilot at d = 1, K = 64, before this
experiment's committed run): the capped field is smooth below its shortest wavelength 1/K,
where the flat-topped bumps make the error fall like h² whatever β; its local slope left
2β/d once a cell held fewer than about 4 shortest wavelengths. So sizes with G − 1 > cutoff/4
(cutoff: K, or the multiscale target's top frequency) are flagged *limited*, and
`laws.regime.rules.fit_range` ends the fit below the first. At small G the error goes like
(G − 1)^-2β while parameters grow like G^d, so the first sizes are steeper (a factor
G/(G − 1) in the local slope: 1.33 at G = 4, 1.07 at 16); the regime test sees that as
curvature.

Parameter-count conventions: ``dense`` (every head's full Q, K, V, and the FFNs: what the
built model holds) and ``appendix_b`` (the paper's N = L_T n_embd² (3m + L_FFN)); both fitted.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from scalelab.config import Record
from scalelab.io import atomic_write_json, atomic_write_text, provenance, read_json
from scalelab.laws.fit.power_law import fit_power_law
from scalelab.laws.regime.analysis import analyse_regime
from scalelab.manifold.construction import build, evaluate, nodes, size_formulas, sizes
from scalelab.manifold.construction_config import TARGETS, ConstructConfig
from scalelab.manifold.field import TorusField
from scalelab.manifold.targets import HolderTarget
from scalelab.progress import progress

#: The field's mode cap K by d: the largest the FFN-free parts (mode list, Hölder sum) allow
#: in seconds; G − 1 ≤ K/4 then covers `DEFAULT_GRIDS`.
FIELD_CAP = {1: 4096, 2: 512, 3: 96}
#: Multiscale target: shells from 1 to 2^13 cycles per unit, √2 apart, 16 frequencies each.
MULTISCALE_OCTAVES, MULTISCALE_PER_SHELL = 13, 16
#: A size is expected in the rate's range while a cell spans at least this many of the
#: target's shortest wavelengths: G − 1 ≤ cutoff / WAVELENGTHS_PER_CELL.
WAVELENGTHS_PER_CELL = 4.0
AGREEMENT = 1e-6  # dense against closed form, float64
CONVENTIONS = ("dense", "appendix_b")
RESULT = "construct.json"


@dataclass(frozen=True)
class CubeTarget:
    """A β-Hölder target on [0, 1]^d with its constant H, bound R and top frequency."""

    name: str
    d: int
    beta: float
    holder: float
    bound: float
    cutoff: float  # highest frequency, cycles per unit length
    field: TorusField | None = None
    multiscale: HolderTarget | None = None

    def at(self, u: np.ndarray) -> np.ndarray:
        """f at points u [n, d] (direct sums)."""
        if self.multiscale is not None:
            return self.multiscale(u)
        theta = 2 * np.pi * u - np.pi
        y = np.empty((u.shape[0], 2 * self.d))
        y[:, 0::2], y[:, 1::2] = np.cos(theta), np.sin(theta)
        return self.field(y / math.sqrt(self.d))

    def lattice(self, M: int, shift: np.ndarray) -> np.ndarray:
        """f at u = (j + shift)/M, j ∈ {0 … M−1}^d, row-major [M^d]; the field by an FFT."""
        if self.field is None:
            return self.at(lattice_points(self.d, M, shift))
        f = self.field
        theta0 = 2 * np.pi * shift / M - np.pi
        coef = f.amplitude * np.exp(1j * (f.phase + f.modes @ theta0))
        flat = np.ravel_multi_index(tuple((f.modes % M).T), (M,) * self.d)
        size = M**self.d
        grid = np.bincount(flat, coef.real, size) + 1j * np.bincount(flat, coef.imag, size)
        return (np.fft.ifftn(grid.reshape((M,) * self.d)) * size).real.ravel()

    def on_nodes(self, G: int) -> np.ndarray:
        """f_n at the bump centres j/(G − 1) (`construction.nodes` order)."""
        if self.field is None:
            return self.at(nodes(self.d, G))
        M = G - 1
        vals = self.lattice(M, np.zeros(self.d)).reshape((M,) * self.d)
        wrap = np.arange(G) % M  # the field is periodic: node G − 1 is node 0
        return vals[np.ix_(*([wrap] * self.d))].ravel()


def lattice_points(d: int, M: int, shift: np.ndarray) -> np.ndarray:
    """[M^d, d] the points (j + shift)/M, row-major."""
    axes = [(np.arange(M) + shift[i]) / M for i in range(d)]
    grids = np.meshgrid(*axes, indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1)


def make_target(
    name: str, d: int, beta: float, rng: np.random.Generator, *, cap: int | None = None
) -> CubeTarget:
    """One draw of the target `name` (module docstring); `cap`: the field's K (default
    `FIELD_CAP`)."""
    if name == "field":
        K = cap or FIELD_CAP.get(d, 16)
        f = TorusField.random(np.eye(2 * d), beta, K * K, rng)
        k = np.linalg.norm(f.modes, axis=1)
        holder = 2 ** (1 - beta) * float(np.sum(f.amplitude * (2 * np.pi * k) ** beta))
        return CubeTarget(name, d, beta, holder, f.bound, float(K), field=f)
    shells = 2 * MULTISCALE_OCTAVES + 1
    t = HolderTarget.random(
        np.eye(d), beta, rng, n_features=shells * MULTISCALE_PER_SHELL, n_shells=shells,
        r_min=2 * np.pi, r_max=2 * np.pi * 2.0**MULTISCALE_OCTAVES,
    )  # fmt: skip
    return CubeTarget(name, d, beta, t.holder_constant, t.bound, 2.0**MULTISCALE_OCTAVES,
                      multiscale=t)  # fmt: skip


@dataclass(frozen=True)
class RateRow(Record):
    """One (d, β, target, draw, G): sizes, the L2 and sup errors, the bounds, the partition."""

    d: int
    beta: float
    target: str
    draw: int
    G: int
    tokens: int
    heads: int
    params_dense: int
    params_appendix_b: int
    mse: float
    sup_error: float
    lemma_bound: float
    sharp_bound: float
    holder: float
    partition_deviation: float
    expected: bool  # G − 1 ≤ cutoff / 4: inside the range where the rate is expected


@dataclass(frozen=True)
class DenseCheck(Record):
    """The dense network against the closed form on a few points of one (d, β, target, G)."""

    d: int
    beta: float
    target: str
    G: int
    tokens: int
    heads: int
    points: int
    max_diff_float64: float
    max_diff_float32: float
    seconds_per_point: float
    interaction_constant_max: float
    agrees: bool


@dataclass(frozen=True)
class RateCheck(Record):
    """The regime test on one (d, β, target) curve in one parameter-count convention."""

    d: int
    beta: float
    target: str
    convention: str
    outcome: str
    power: float | None
    G_range: tuple[int, int] | None
    decades: float
    n_points: int
    exponent: float | None
    ci95: tuple[float, float] | None
    predicted: float
    local_slopes: list[float]
    upper_reason: str


@dataclass(frozen=True)
class TrainedCurve(Record):
    """The trained online models of the `theorem` sweep at one d: error vs parameters."""

    d: int
    beta: float
    params: list[float]
    errors: list[float]
    exponent: float | None


@dataclass(frozen=True)
class ConstructResult(Record):
    config: ConstructConfig
    rows: list[RateRow]
    dense: list[DenseCheck]
    checks: list[RateCheck]
    sizes: list[dict[str, Any]]
    trained: list[TrainedCurve] = field(default_factory=list)
    seconds: float = 0.0
    provenance: dict[str, Any] = field(default_factory=dict)


def lattice_size(d: int, n_eval: int) -> int:
    """Points per axis of the evaluation lattice: about n_eval^(1/d)."""
    return max(2, round(n_eval ** (1.0 / d)))


def draw_rows(
    cfg: ConstructConfig, d: int, beta: float, name: str, draw: int
) -> tuple[list[RateRow], CubeTarget, np.ndarray, dict[int, np.ndarray]]:
    """The rows of one draw, and what the dense check needs (target, lattice, values)."""
    rng = np.random.default_rng([cfg.seed, d, round(beta * 1000), draw, TARGETS.index(name)])
    target = make_target(name, d, beta, rng)
    M = lattice_size(d, cfg.n_eval)
    shift = rng.random(d)
    u = lattice_points(d, M, shift)
    fu = target.lattice(M, shift)
    rows, values = [], {}
    for G in cfg.grid_for(d):
        fn = target.on_nodes(G)
        values[G] = fn
        err = evaluate(u, fn, G) - fu
        s = sizes(d, G)
        h = 1.0 / (G - 1)
        rows.append(RateRow(
            d=d, beta=beta, target=name, draw=draw, G=G, tokens=s.tokens, heads=s.heads,
            params_dense=s.params_dense, params_appendix_b=s.params_appendix_b,
            mse=float(np.mean(err**2)), sup_error=float(np.abs(err).max()),
            lemma_bound=2**d * d**beta * target.holder * h**beta,
            sharp_bound=target.holder * (math.sqrt(d) * 2 * h / 3) ** beta,
            holder=target.holder,
            partition_deviation=float(np.abs(evaluate(u, np.ones(G**d), G) - 1).max()),
            expected=bool(target.cutoff / WAVELENGTHS_PER_CELL >= G - 1),
        ))  # fmt: skip
    return rows, target, u, values


def dense_check(
    d: int, beta: float, name: str, G: int, values: np.ndarray, u: np.ndarray
) -> DenseCheck:
    """Run the built network literally (float64, then float32) on the points u."""
    model = build(d, G, values)
    t0 = time.perf_counter()
    out64 = model.forward(u)
    per_point = (time.perf_counter() - t0) / len(u)
    out32 = model.forward(u, dtype=torch.float32)
    ref = evaluate(u, values, G)
    c = max(float(np.nanmax(b.c)) for b in model.blocks if np.isfinite(b.c).any())
    diff64 = float(np.abs(out64 - ref).max())
    return DenseCheck(
        d=d, beta=beta, target=name, G=G, tokens=model.tokens, heads=model.heads,
        points=len(u), max_diff_float64=diff64, max_diff_float32=float(np.abs(out32 - ref).max()),
        seconds_per_point=per_point, interaction_constant_max=c, agrees=diff64 <= AGREEMENT,
    )  # fmt: skip


def dense_cost(d: int, G: int) -> float:
    """heads · l²: the score entries one dense pass computes per point."""
    s = sizes(d, G)
    return float(s.heads) * s.tokens**2


def rate_checks(rows: list[RateRow], seed: int) -> list[RateCheck]:
    """Per (d, β, target) and convention: `laws.regime.analysis.analyse_regime` on error vs params
    (floor 0: an approximation error has none), sizes beyond the expected range limited."""
    out = []
    keys = sorted({(r.d, r.beta, r.target) for r in rows})
    for d, beta, name in keys:
        mine = [r for r in rows if (r.d, r.beta, r.target) == (d, beta, name)]
        y = np.array([r.mse for r in mine])
        limited = np.array([not r.expected for r in mine])
        for conv in CONVENTIONS:
            x = np.array([getattr(r, f"params_{conv}") for r in mine], dtype=np.float64)
            res = analyse_regime(
                x, y, limited=limited, floor=0.0, floor_source="exact: no noise", seed=seed
            )
            rng, plain = res.fit_range, res.plain
            g_of = {getattr(r, f"params_{conv}"): r.G for r in mine}
            out.append(RateCheck(
                d=d, beta=beta, target=name, convention=conv, outcome=res.outcome,
                power=res.power.power if res.power is not None else None,
                G_range=None if rng.empty else (g_of[rng.x_lo], g_of[rng.x_hi]),
                decades=rng.decades, n_points=rng.n_points,
                exponent=plain.exponent if plain is not None else None,
                ci95=tuple(plain.exponent_ci95) if plain is not None else None,
                predicted=2 * beta / d, local_slopes=[float(s) for s in res.local_slopes.slope],
                upper_reason=rng.upper_reason,
            ))  # fmt: skip
    return out


def size_table(budget: float, grids: tuple[int, ...] = (3, 4)) -> list[dict[str, Any]]:
    """d = 1 … 4: the formulas in G, and at each G of `grids` the built model's counts
    (checked equal to `sizes`) and the dense pass's time per point where within `budget`."""
    rng = np.random.default_rng(0)
    table = []
    for d in range(1, 5):
        for G in grids:
            s = sizes(d, G)
            model = build(d, G, rng.standard_normal(G**d))
            built = (model.tokens, model.heads, len(model.blocks), model.params)
            if built != (s.tokens, s.heads, s.depth, s.params_dense):
                raise AssertionError(f"d={d}, G={G}: built {built} != formulas {s}")
            seconds = None
            if dense_cost(d, G) <= budget:
                t0 = time.perf_counter()
                model.forward(rng.random((2, d)))
                seconds = (time.perf_counter() - t0) / 2
            formulas = {f"formula_{k}": v for k, v in size_formulas(d).items()}
            table.append({**formulas, **asdict(s), "weight_bound": model.weight_bound,
                          "dense_seconds_per_point": seconds})  # fmt: skip
    return table


def trained_curves(path: Path) -> list[TrainedCurve]:
    """The `online` runs of a `theorem` sweep's runs.csv (approximation error on the capped
    field vs parameters), with the plain power-law exponent over all widths."""
    if not path.exists():
        return []
    import pandas as pd

    table = pd.read_csv(path)
    runs = table[table["task"] == "online"]
    out = []
    for (d, beta), g in runs.groupby(["d", "beta"]):
        g = g.groupby("params", as_index=False)["test_mse_capped"].mean()
        x, y = g["params"].to_numpy(float), g["test_mse_capped"].to_numpy(float)
        alpha = fit_power_law(x, y, n_boot=0).exponent if len(x) >= 3 else None
        out.append(TrainedCurve(int(d), float(beta), x.tolist(), y.tolist(), alpha))
    return out


def run_construct(
    cfg: ConstructConfig, out: Path | None = None, *, trained: Path | None = None,
    quiet: bool = False,
) -> ConstructResult:  # fmt: skip
    """The whole experiment; with `out`, writes construct.json and rows.csv there."""
    t0 = time.perf_counter()
    rows: list[RateRow] = []
    dense: list[DenseCheck] = []
    curves = [(d, b, n) for d in cfg.dims for b in cfg.betas for n in cfg.targets]
    with progress("construct", len(curves) * cfg.draws, quiet=quiet) as advance:
        for d, beta, name in curves:
            for draw in range(cfg.draws):
                new, _, u, values = draw_rows(cfg, d, beta, name, draw)
                rows += new
                if not draw and cfg.dense_points:
                    pick = np.random.default_rng(cfg.seed).choice(len(u), cfg.dense_points)
                    sizes_run = [G for G in cfg.grid_for(d) if dense_cost(d, G) <= cfg.dense_budget]
                    dense += [dense_check(d, beta, name, G, values[G], u[pick]) for G in sizes_run]
                advance(info=f"d={d} β={beta:g} {name} draw {draw}")
    result = ConstructResult(
        config=cfg, rows=rows, dense=dense, checks=rate_checks(rows, cfg.seed),
        sizes=size_table(cfg.dense_budget), trained=trained_curves(trained) if trained else [],
        seconds=time.perf_counter() - t0, provenance=provenance(),
    )  # fmt: skip
    if out is not None:
        write_result(result, out)
    return result


def write_result(result: ConstructResult, out: Path) -> None:
    """construct.json (everything, with config and provenance) and rows.csv, atomically."""
    import pandas as pd

    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / RESULT, result)
    table = pd.DataFrame([r.to_dict() for r in result.rows])
    atomic_write_text(out / "rows.csv", table.to_csv(index=False))


def load_result(out: Path) -> ConstructResult:
    """A folder's construct.json read back (to redraw its figure and tables)."""
    return ConstructResult.from_dict(read_json(Path(out) / RESULT))
