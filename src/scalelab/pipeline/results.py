"""What the steps of `scalelab validate` return (`pipeline.steps`), and pipeline.json
(`Request`) and summary.json (`Summary`) as typed objects. Each is a frozen dataclass; the
writer converts them where a file is written (pipeline.json, fits.json, summary.json), and
`Summary.from_dict` is called only where one is read (validate-many, `Summary.load`). The
JSON has the keys committed folders hold, so they read. One conversion is
not a file's: `Fits.sides` turns the fits by side (laid out by `Sides` and `DataSide`) into
the dict `Summary.fits` holds, as validate-many and the CLI read it, by key, from a
summary.json of any earlier format.

The fit range (`laws.regime.rules.FitRange`) is computed once per validation, when the data
sweep's check is known (`steps.check`): `Check.fit_range` is the range the
check's refits, the observed exponent (`Fits`) and the regime analysis all use.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scalelab.config import FLAT, OMIT_DEFAULT, Record, saved_as, saved_key
from scalelab.pipeline.config import PipelineConfig
from scalelab.pipeline.declaration import SUMMARY
from scalelab.runs.migrate import migrate

if TYPE_CHECKING:
    from scalelab.laws.fit.fitted import PowerLawFit
    from scalelab.laws.regime.analysis import RegimeAnalysis
    from scalelab.laws.regime.rules import FitRange


@dataclasses.dataclass(frozen=True)
class Request(Record):
    """pipeline.json (`steps.prepare`): the config's keys, then the reference models'
    resolved paths. A folder holding another request is refused (`outdir.check`)."""

    config: PipelineConfig = field(metadata=FLAT)
    references: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Along:
    """d of every data-sweep run on the same test positions (`probe.along`), and its trend."""

    rows: list[dict[str, Any]]
    trend: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Check:
    """One sweep's convergence check: its verdict (`sweeps.check.verdict`, saved as
    JSON) and, for the data sweep, the fit range its refits used (None: every run)."""

    verdict: dict[str, Any]
    fit_range: FitRange | None = None

    @property
    def text(self) -> str:
        return str(self.verdict["text"])


@dataclasses.dataclass(frozen=True)
class SideFit(Record):
    """One sweep's observed exponent, both forms, over `x_range` (power+E: None below 4
    sizes)."""

    x_range: tuple[float, float]
    power: PowerLawFit
    power_e: PowerLawFit | None = field(metadata=saved_as("power+E"))


@dataclasses.dataclass(frozen=True)
class Regime(Record):
    """The data sweep's regime analysis (`laws.regime.analysis.analyse_regime`) over the one fit
    range, with where its unigram entropy and floor E came from, the runs the range stops
    below and, on a facts corpus, the capacity at the range's top."""

    analysis: RegimeAnalysis = field(metadata=FLAT)  # saved as its keys, then the rest
    unigram_entropy_nats: float | None
    unigram_source: str
    floor_nats: float | None
    floor_source: str
    limited_runs: dict[str, str]
    capacity: Any = None


@dataclasses.dataclass(frozen=True)
class DataSide(Record):
    """The data side as fits.json and summary.json hold it: its fit's keys, then its
    regime."""

    fit: SideFit = field(metadata=FLAT)
    regime: Regime


@dataclasses.dataclass(frozen=True)
class Sides(Record):
    """The fits by side as fits.json and summary.json hold them; "model" is left out, not
    null, without a model sweep (as these files have always had it)."""

    data: DataSide
    model: SideFit | None = field(default=None, metadata=OMIT_DEFAULT)


@dataclasses.dataclass(frozen=True)
class Fits:
    """Step 7: the observed exponents of both sweeps beside every reference model's d, the
    data side's regime, and both checks (fits.json)."""

    references: list[dict[str, Any]]
    data: SideFit
    model: SideFit | None
    regime: Regime
    data_check: Check | None = None
    model_check: Check | None = None

    def sides(self) -> dict[str, Any]:
        """The fits by side as summary.json holds them (`Sides`)."""
        return Sides(DataSide(self.data, self.regime), self.model).to_dict()

    def checks(self) -> dict[str, Any]:
        """Both sides' check verdicts (saved under fits.json's older key "convergence")."""
        return {
            "data": None if self.data_check is None else self.data_check.verdict,
            "model": None if self.model_check is None else self.model_check.verdict,
        }

    def to_dict(self) -> dict[str, Any]:
        # fits.json's keys: "sources" (the reference models' d), "convergence" (the checks)
        return {"sources": self.references, **self.sides(), "convergence": self.checks()}


@dataclasses.dataclass(frozen=True)
class Summary(Record):
    """summary.json: what a validation found (the fits and checks as their JSON), its runs,
    its times and the config it ran (a `PipelineConfig`). A key an older (or hand-made)
    summary.json lacks reads as empty."""

    report_html: str = ""
    report_md: str = ""
    synthetic: dict[str, Any] = field(default_factory=dict)
    # Each reference model's d; saved as "sources", the key summary.json has always had.
    references: list[dict[str, Any]] = field(default_factory=list, metadata=saved_as("sources"))
    fits: dict[str, Any] = field(default_factory=dict)
    # Both sides' convergence checks (`Fits.checks`); saved as "convergence", the key
    # summary.json has always had.
    checks: dict[str, Any] = field(default_factory=dict, metadata=saved_as("convergence"))
    runs: list[dict[str, Any]] = field(default_factory=list)
    model_runs: list[dict[str, Any]] = field(default_factory=list)
    along: list[dict[str, Any]] = field(default_factory=list)
    along_trend: dict[str, Any] = field(default_factory=dict)
    stage_wall_s: dict[str, float] = field(default_factory=dict)
    stage_cpu_s: dict[str, float] = field(default_factory=dict)
    wall_s: float = 0.0
    cpu_s: float = 0.0
    config: PipelineConfig = field(default_factory=PipelineConfig)
    provenance: dict[str, Any] = field(default_factory=dict)
    invocations: list[dict[str, Any]] = field(default_factory=list)

    @property
    def largest_run(self) -> dict[str, Any]:
        """The data sweep's largest run (its row)."""
        return max(self.runs, key=lambda r: r["train_tokens"])

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Summary:
        """Keys this version does not know are left out (a summary.json is read, not
        resumed)."""
        keys = {saved_key(f) for f in dataclasses.fields(cls)}
        return super().from_dict({k: v for k, v in migrate(data).items() if k in keys})

    @classmethod
    def load(cls, folder: str | Path) -> Summary:
        """The summary.json of the validation folder `folder`."""
        return super().load(Path(folder) / SUMMARY)
