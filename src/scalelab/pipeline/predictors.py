"""What validate-many scores: every predictor of alpha_D, one class each, one interface.

A predictor has a `name` (its row label; for a source of d, the suffix it adds to the reference
model's label), an `observable` (what it predicts: `PLAIN`, the plain log-log slope of the data
sweep, or `EXCESS`, the exponent of the excess loss L − E over the fit range) and
`predict(corpus, model)`. The sources of d run once per reference model of a corpus (`each_model`:
its d at the protocol's batch size, the same d extrapolated in batch size, the calibrated MLE on
its saved points); the second theory runs once per corpus (γ/(2β) from corpus statistics, with
the earlier instrument and with its authors' instruments). validate-many calls `predict_corpus`,
which goes through `PREDICTORS` in its declared order: that order is the order of the table.

"Source" here is a row of the table (`Prediction.source`, where a prediction comes from); a
reference model (a model that measures d) is `probe.references.Reference`. A new predictor
touches at most 3 files (docs/sources.md):
  1. this module: its class (a per-corpus one subclasses `PerCorpus` and writes `measure`),
     and one line in `PREDICTORS`;
  2. tests/test_pipeline_many.py: its prediction checked against a number known by hand;
  3. report/many.py, only where it has instruments worth a table: one entry in `SECTIONS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from scalelab.errors import ScalelabError
from scalelab.intrinsic import PAPER_BATCH_SIZE, PAPER_K
from scalelab.io import atomic_write_json, read_json
from scalelab.laws.theory import alpha_D
from scalelab.pipeline.declaration import Entry
from scalelab.pipeline.results import Summary

STATISTICS = "Cagnetta γ/(2β)"
#: The second theory with its authors' instruments, scored on the exponent it predicts.
SECOND_THEORY = "Cagnetta γ/(2β), counts (excess loss)"
#: What each row's observed exponent is: the plain log-log slope of the data sweep, or the
#: exponent of its excess loss L − E over the fit range (what the second theory predicts).
PLAIN, EXCESS = "plain slope", "excess exponent"
EXTRAPOLATED = " (batch → ∞)"
CALIBRATED = " (calibrated MLE)"


@dataclass(frozen=True)
class Corpus:
    """What a predictor may read of one corpus: its entry, its validate summary, its reference
    models' d (one row each, declared labels), its cache folder, the declaration."""

    entry: Entry
    summary: Summary
    models: list[dict[str, Any]]
    cache: Path
    declaration: dict[str, Any]
    say: Callable[[str], None]


@dataclass(frozen=True)
class Prediction:
    """One predicted alpha_D (its interval where it has one); `details`: how it was measured.
    `alpha_D` None: not measured (`details` says why), no row."""

    source: str
    d: float | None
    alpha_D: float | None
    lo: float | None
    hi: float | None
    details: dict[str, Any] | None = None


class Predictor(Protocol):
    """One predictor of alpha_D. `each_model`: predicted once per reference model (a source of
    d, given `model`), else once per corpus, its measurements cached as cache/KEY.json and
    recorded under `key` in scores.json's details ('' for a source of d)."""

    name: str
    observable: str
    each_model: bool
    key: str

    def predict(self, corpus: Corpus, model: dict[str, Any] | None = None) -> Prediction | None:
        """The prediction for the corpus (and model), or None where there is none."""
        ...


class AtProtocol:
    """The reference model's d at the protocol's batch size (interval: its batch/K range)."""

    name, observable, each_model, key = "", PLAIN, True, ""

    def predict(self, corpus: Corpus, model: dict[str, Any] | None = None) -> Prediction:
        lo, hi = model["alpha_D_range"]
        return Prediction(model["label"], model["dimension"], model["alpha_D"], lo, hi)


class BatchExtrapolated:
    """The same d extrapolated in batch size (`intrinsic.debiased`), where d was measured at
    two batch sizes or more."""

    name, observable, each_model, key = EXTRAPOLATED, PLAIN, True, ""

    def predict(self, corpus: Corpus, model: dict[str, Any] | None = None) -> Prediction | None:
        from scalelab.intrinsic.debiased import batch_points, extrapolate_in_batch

        b, d = batch_points(model.get("sensitivity", []), model.get("k") or PAPER_K)
        if len(set(b)) < 2:
            return None
        fit = extrapolate_in_batch(b, d)
        d_inf = fit["d_inf"]
        return Prediction(model["label"] + self.name, d_inf, float(alpha_D(d_inf)), None, None, fit)


class CalibratedMLE:
    """The calibrated MLE on the reference model's saved points (cached), where it has them."""

    name, observable, each_model, key = CALIBRATED, PLAIN, True, ""

    def predict(self, corpus: Corpus, model: dict[str, Any] | None = None) -> Prediction | None:
        cal = _calibrated(model, corpus.cache, seed=0)
        if cal is None:
            return None
        se = cal.get("dimension_se")
        band = [cal["dimension"] - 1.96 * se, cal["dimension"] + 1.96 * se] if se else None
        return Prediction(
            model["label"] + self.name,
            cal["dimension"],
            float(alpha_D(cal["dimension"])),
            float(alpha_D(band[1])) if band else None,
            float(alpha_D(max(band[0], 1e-6))) if band else None,
            cal,
        )


def _calibrated(row: dict, cache: Path, seed: int) -> dict[str, Any] | None:
    path = cache / f"calibrated-{row['label']}.json"
    if path.is_file():
        return read_json(path)
    if not row.get("points") or not Path(row["points"]).is_file():
        return None
    from scalelab.intrinsic.debiased import calibrated_in_batches
    from scalelab.probe.estimate import load_embeddings

    x, _ = load_embeddings(Path(row["points"]))
    est = calibrated_in_batches(x, row.get("batch_size") or PAPER_BATCH_SIZE, seed=seed)
    atomic_write_json(path, est)
    return est


def _store(e: Entry, summary: Summary) -> Path:
    from scalelab.pipeline.store import is_token_store

    corpus = summary.config.corpus
    return Path(corpus) if is_token_store(corpus) else e.folder / "data"


class PerCorpus:
    """A predictor run once per corpus: `measure` (what subclasses write) returns what it
    measured, with "alpha_D" and "alpha_D_range" or an "error"; cached as cache/KEY.json."""

    name, observable, each_model, key = "", PLAIN, False, ""

    def measure(self, corpus: Corpus) -> dict[str, Any]:
        raise NotImplementedError

    def predict(self, corpus: Corpus, model: dict[str, Any] | None = None) -> Prediction:
        path = corpus.cache / f"{self.key}.json"
        if path.is_file():
            result = read_json(path)
        else:
            result = self.measure(corpus)
            atomic_write_json(path, result)
        if "alpha_D" not in result:
            return Prediction(self.name, None, None, None, None, result)
        lo, hi = result["alpha_D_range"]
        return Prediction(self.name, None, result["alpha_D"], lo, hi, result)


class Statistics(PerCorpus):
    """The second theory with the earlier instrument (`probe.statistics.predict_from_statistics`),
    scored against the plain slope; not measured ({"error": ...}) where its statistics cannot
    be measured (the reason is reported, the corpus left unscored)."""

    name, observable, key = STATISTICS, PLAIN, "statistics"

    def measure(self, corpus: Corpus) -> dict[str, Any]:
        from scalelab.probe.references import parse_reference
        from scalelab.probe.statistics import StatisticsConfig, predict_from_statistics

        e, summary = corpus.entry, corpus.summary
        opts = dict(corpus.declaration.get("statistics", {}))
        gamma_model = opts.pop("gamma_model", "own")
        if gamma_model == "own":
            largest = summary.largest_run["run"]
            model_path, weights = str(e.folder / "sweep" / "runs" / largest), None
        else:
            src = parse_reference(gamma_model)
            model_path, weights = src.path, src.weights
        try:
            cfg = StatisticsConfig(**opts)
            result = predict_from_statistics(_store(e, summary), model_path, cfg, weights=weights)
        except ScalelabError as err:
            corpus.say(f"  {e.name}: {STATISTICS} not measured: {err}")
            result = {"error": str(err)}
        result["gamma_model"] = model_path
        return result


class SecondTheory(PerCorpus):
    """The second theory's prediction of the excess-loss exponent with the declared
    instruments (`probe.statistics.predict_from_counts`): counted on the sweep's own train
    split, at the horizon of the sweep's largest budget."""

    name, observable, key = SECOND_THEORY, EXCESS, "second_theory"

    def measure(self, corpus: Corpus) -> dict[str, Any]:
        from scalelab.probe.statistics import CountsConfig, predict_from_counts

        e, summary = corpus.entry, corpus.summary
        budget = summary.largest_run["train_tokens"]
        context = summary.config.train.block_size
        try:
            result = predict_from_counts(_store(e, summary), budget, CountsConfig(context))
        except ScalelabError as err:
            result = {"error": str(err)}
        if "error" in result:
            corpus.say(f"  {e.name}: {SECOND_THEORY} not measured: {result['error']}")
        return result


#: Every predictor validate-many scores, in the order of its table: per reference model the
#: sources of d, then per corpus the second theory. A new predictor is one line here.
PREDICTORS: tuple[Predictor, ...] = (
    AtProtocol(),
    BatchExtrapolated(),
    CalibratedMLE(),
    Statistics(),
    SecondTheory(),
)


def predict_corpus(
    corpus: Corpus, predictors: tuple[Predictor, ...] = PREDICTORS
) -> tuple[list[tuple[str, Prediction]], dict[str, Any]]:
    """(observable, prediction) for every predictor with a prediction, in the declared order
    (the sources of d for each reference model in turn, then the per-corpus ones), and what
    was measured: each per-corpus predictor's measurements under its key, the sources of d's
    predictions under "predictions"."""
    each = [p for p in predictors if p.each_model]
    made = [(p.observable, x) for m in corpus.models for p in each if (x := p.predict(corpus, m))]
    measured: dict[str, Any] = {}
    of_models = [asdict(x) for _, x in made]
    for p in predictors:
        if not p.each_model:
            x = p.predict(corpus)
            measured[p.key] = x.details
            if x.alpha_D is not None:
                made.append((p.observable, x))
    measured["predictions"] = of_models
    return made, measured
