"""`scalelab validate-many`: every source of d scored as a predictor of alpha_D across corpora.

For each corpus: run `validate` (or reuse a folder whose summary.json exists: read, never
rerun), then collect the predictions of every source of d — each reference model's d at the
protocol's batch size, the same d extrapolated in batch size (`intrinsic.debiased`), the
calibrated MLE on the same points — and of the second theory, γ/(2β) from corpus statistics:
with its authors' instruments (`probe.statistics.predict_from_counts`), scored against the
exponent of the excess loss it predicts, and with the earlier instrument, scored against the
plain slope (`probe.statistics.predict_from_statistics`). Every source is scored on the
observable it predicts, beside baselines computed on that observable. Scores (`laws.score`)
put each source beside four baselines that ignore d (the constant 0.095, the leave-one-out
mean, its mean within the corpus's kind, the leave-one-out median) with paired bootstrap
intervals over corpora, on all corpora and on real and synthetic corpora apart. Writes
OUT/table.csv and .json (one row per corpus and source), OUT/scores.json,
OUT/report/report.html and .md; the slower derived numbers (calibrated d, statistics) are
cached per corpus under OUT/cache/.
"""

from __future__ import annotations

import csv
import io
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scalelab.errors import InputError, ScalelabError
from scalelab.intrinsic import PAPER_BATCH_SIZE, PAPER_K
from scalelab.io import atomic_write_json, atomic_write_text, provenance, read_json
from scalelab.laws import score as scoring
from scalelab.laws.theory import alpha_D
from scalelab.pipeline.declaration import (
    CONFIG,
    SUMMARY,
    Entry,
    entries,
    entries_from_inputs,
    read_declaration,
    references,
)
from scalelab.pipeline.results import Summary
from scalelab.runs.sweep import WORKERS

STATISTICS = "Cagnetta γ/(2β)"
#: The second theory with its authors' instruments, scored on the exponent it predicts.
SECOND_THEORY = "Cagnetta γ/(2β), counts (excess loss)"
#: What each row's observed exponent is: the plain log-log slope of the data sweep, or the
#: exponent of its excess loss L − E over the fit range (what the second theory predicts).
PLAIN, EXCESS = "plain slope", "excess exponent"
EXTRAPOLATED = " (batch → ∞)"
CALIBRATED = " (calibrated MLE)"
TABLE_COLUMNS = [
    "corpus",
    "kind",
    "source",
    "d",
    "predicted_alpha_D",
    "predicted_lo",
    "predicted_hi",
    "observed_alpha_D",
    "observed_lo",
    "observed_hi",
    "error",
    "observable",
    "excluded",
]


def _validate_label(path: str) -> str:
    """The label `validate` gives a reference model (its file stem or folder name)."""
    p = Path(path)
    return p.stem if p.suffix == ".gguf" else p.name


def validated(e: Entry, refs: list[tuple[str, str]], run: bool, pool: dict, say: Callable):
    """summary.json of the entry's validate folder: read when it exists, else run (or resume)
    `run_pipeline` with the declared corpus and options, or with the folder's own config."""
    if (e.folder / SUMMARY).is_file():
        say(f"  {e.name}: reusing {e.folder / SUMMARY}")
        return Summary.load(e.folder)
    if not run:
        raise InputError(
            f"{e.folder} has no {SUMMARY} and --no-run was given; drop --no-run to validate it"
        )
    from scalelab.pipeline.run import run_pipeline

    cfg, paths = _request(e, refs)
    say(f"  {e.name}: validate {cfg.corpus!r} into {e.folder}")
    return run_pipeline(e.folder, cfg, references=paths, say=say, **pool)


def _request(e: Entry, refs: list[tuple[str, str]]) -> tuple[Any, list[str]]:
    """The validate config and reference-model paths of an entry still to be validated: the
    declared corpus and options, or the folder's own config."""
    from scalelab.pipeline.config import PipelineConfig

    if e.corpus is not None:
        return PipelineConfig.from_options(**e.options, corpus=e.corpus), [p for _, p in refs]
    if (e.folder / CONFIG).is_file():
        request = read_json(e.folder / CONFIG)
        paths = request.pop("references", [])
        return PipelineConfig.from_dict(request), paths
    raise InputError(f"{e.folder} is neither a validate folder nor a corpus; check it")


def _corpora(n: int) -> str:
    return f"{n} corpus" if n == 1 else f"{n} corpora"


def preflight(out: Path, items: list[Entry], refs: list[tuple[str, str]], say: Callable) -> None:
    """Prepare the token store of every corpus still to be validated before any training, so
    that a corpus the protocol cannot take (unreadable, too small for a sweep size or for one
    MLE batch of its test split) is refused at the start of an hours-long run, all of them in
    one message, not when its turn comes. On refusal every folder this made is removed again
    (`out` too, if it made it): nothing is left half-written."""
    from scalelab.pipeline import steps
    from scalelab.runs import outdir

    todo = [e for e in items if not (e.folder / SUMMARY).is_file()]
    if todo:
        say(f"checking {_corpora(len(todo))} before any training (token stores, sizes, ID points)")
    fresh, made, refused = not out.exists(), [], []
    for e in todo:
        if not e.folder.exists():
            made.append(e.folder)
        try:
            cfg, paths = _request(e, refs)
            steps.prepare(e.folder, cfg, paths)
        except ScalelabError as err:
            refused.append(f"{e.name}: {err}")
        finally:
            outdir.release_under(e.folder)
    if refused:
        for folder in [out] if fresh else made:
            shutil.rmtree(folder, ignore_errors=True)
        raise InputError(
            f"{_corpora(len(refused))} refused before any training (fix each, then rerun): "
            + "; ".join(refused)
        )


def _estimate_source(label: str, folder: Path, cache: Path) -> dict[str, Any]:
    """A source row (as validate's) from an earlier `scalelab estimate` folder: its d, and d
    at the sensitivity settings computed on its saved points (cached)."""
    path = cache / f"source-{label}.json"
    if path.is_file():
        return read_json(path)
    from scalelab.probe.estimate import EMBEDDINGS, RESULT, EstimateConfig, load_embeddings
    from scalelab.probe.sources import sensitivity, summarize

    doc = read_json(folder / RESULT)
    s = doc.get("settings", {})
    cfg = EstimateConfig(k=s.get("k", PAPER_K), batch_size=s.get("batch_size", PAPER_BATCH_SIZE))
    x, _ = load_embeddings(folder / EMBEDDINGS)
    row = summarize(label, doc["model"]["kind"], doc, sensitivity(x, cfg))
    row["points"] = str(folder / EMBEDDINGS)
    atomic_write_json(path, row)
    return row


def _sources(e: Entry, summary: Summary, refs: list[tuple[str, str]], cache: Path) -> list[dict]:
    """Every source row of the corpus, relabelled with the declared labels; the saved
    points of each (for the calibrated MLE) where the folder has them."""
    rename = {_validate_label(p): label for label, p in refs}
    folders = {}
    for f in sorted((e.folder / "d").glob("*/source.json")):
        folders[read_json(f)["label"]] = f.parent / "embeddings.safetensors"
    rows = []
    for s in summary.sources:
        row = {**s, "label": rename.get(s["label"], s["label"])}
        row.setdefault("points", str(folders.get(s["label"], "")))
        rows.append(row)
    rows += [_estimate_source(lbl, Path(f), cache) for lbl, f in e.estimates.items()]
    return rows


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


def predictions(rows: list[dict], cache: Path, seed: int = 0) -> list[dict[str, Any]]:
    """(source, d, alpha_D, lo, hi, details) for each source row: the protocol's d (interval:
    its batch/K range), d extrapolated in batch size, the calibrated MLE."""
    from scalelab.intrinsic.debiased import batch_points, extrapolate_in_batch

    out = []
    for r in rows:
        lo, hi = r["alpha_D_range"]
        out.append({"source": r["label"], "d": r["dimension"], "alpha_D": r["alpha_D"],
                    "lo": lo, "hi": hi, "details": None})  # fmt: skip
        b, d = batch_points(r.get("sensitivity", []), r.get("k") or PAPER_K)
        if len(set(b)) >= 2:
            fit = extrapolate_in_batch(b, d)
            out.append({"source": r["label"] + EXTRAPOLATED, "d": fit["d_inf"],
                        "alpha_D": float(alpha_D(fit["d_inf"])), "lo": None, "hi": None,
                        "details": fit})  # fmt: skip
        cal = _calibrated(r, cache, seed)
        if cal is not None:
            se = cal.get("dimension_se")
            band = [cal["dimension"] - 1.96 * se, cal["dimension"] + 1.96 * se] if se else None
            out.append({"source": r["label"] + CALIBRATED, "d": cal["dimension"],
                        "alpha_D": float(alpha_D(cal["dimension"])),
                        "lo": float(alpha_D(band[1])) if band else None,
                        "hi": float(alpha_D(max(band[0], 1e-6))) if band else None,
                        "details": cal})  # fmt: skip
    return out


def _store(e: Entry, summary: Summary) -> Path:
    from scalelab.pipeline.store import is_token_store

    corpus = summary.config.corpus
    return Path(corpus) if is_token_store(corpus) else e.folder / "data"


def statistics(e: Entry, summary: Summary, doc: dict, cache: Path, say: Callable) -> dict:
    """The second theory's prediction for the corpus (cached); {"error": ...} when its
    statistics cannot be measured (the reason is reported, the corpus left unscored)."""
    path = cache / "statistics.json"
    if path.is_file():
        return read_json(path)
    from scalelab.probe.sources import parse_source
    from scalelab.probe.statistics import StatisticsConfig, predict_from_statistics

    opts = dict(doc.get("statistics", {}))
    gamma_model = opts.pop("gamma_model", "own")
    if gamma_model == "own":
        largest = summary.largest_run["run"]
        model, weights = str(e.folder / "sweep" / "runs" / largest), None
    else:
        src = parse_source(gamma_model)
        model, weights = src.path, src.weights
    try:
        cfg = StatisticsConfig(**opts)
        result = predict_from_statistics(_store(e, summary), model, cfg, weights=weights)
    except ScalelabError as err:
        say(f"  {e.name}: {STATISTICS} not measured: {err}")
        result = {"error": str(err)}
    result["gamma_model"] = model
    atomic_write_json(path, result)
    return result


def second_theory(e: Entry, summary: Summary, cache: Path, say: Callable) -> dict:
    """The second theory's prediction of the excess-loss exponent with the declared
    instruments (`probe.statistics.predict_from_counts`, cached): counted on the sweep's
    own train split, at the horizon of the sweep's largest budget."""
    path = cache / "second_theory.json"
    if path.is_file():
        return read_json(path)
    from scalelab.probe.statistics import CountsConfig, predict_from_counts

    budget = summary.largest_run["train_tokens"]
    context = summary.config.train.block_size
    try:
        result = predict_from_counts(_store(e, summary), budget, CountsConfig(context))
    except ScalelabError as err:
        result = {"error": str(err)}
    if "error" in result:
        say(f"  {e.name}: {SECOND_THEORY} not measured: {result['error']}")
    atomic_write_json(path, result)
    return result


def excess_observed(summary: Summary) -> tuple[dict[str, Any] | None, str]:
    """The excess-loss exponent over the fit range, and why it is not scored ('' when it
    is): no regime analysis, or an excess fit whose E is not estimable."""
    regime = summary.fits["data"].get("regime")
    excess = (regime or {}).get("excess")
    if excess is None:
        return None, "no excess-loss exponent (no fit range)"
    if not excess["estimable"]:
        return excess, "excess exponent not estimable (E at its bound)"
    return excess, ""


def excluded_because(summary: Summary, *, excess: bool = False) -> str:
    """Why a validation's observed exponent is left out of every score ('' when it is not):
    an outcome other than POWER LAW over its fit range (CURVED or UNDECIDED, with the test's
    power), or a convergence check that flags it. `excess`: the outcome of the excess loss
    L − E, the second theory's observable (where it was tested; else the plain one's). A folder
    from before the regime test has none to fail and is scored (its rows say so)."""
    from scalelab.laws.observe import outcome_of, power_words
    from scalelab.laws.regime import POWER_LAW

    regime = summary.fits["data"].get("regime")
    check = summary.convergence.get("data") or {}
    why = []
    if regime is not None:
        own = excess and bool(outcome_of(regime, excess=True))
        outcome = outcome_of(regime, excess=own)
        if outcome != POWER_LAW:
            power = power_words(regime, excess=own)
            why.append(outcome + (f" ({power})" if power else ""))
    why += [label.lower() for label in check.get("labels", [])]
    return "; ".join(why)


def _rows(
    e: Entry, summary: Summary, preds: list[dict], stats: dict, second: dict
) -> list[dict[str, Any]]:
    # the plain slope over the fit range by rule; a folder from before the regime test has
    # only the fit over every size
    fit = (summary.fits["data"].get("regime") or {}).get("plain")
    fit = fit or summary.fits["data"]["power"]
    excluded = excluded_because(summary)
    plain = (fit["exponent"], *fit["exponent_ci95"])
    if "alpha_D" in stats:
        lo, hi = stats["alpha_D_range"]
        preds = [*preds, {"source": STATISTICS, "d": None, "alpha_D": stats["alpha_D"],
                          "lo": lo, "hi": hi}]  # fmt: skip
    observed = {p["source"]: (PLAIN, plain, excluded) for p in preds}
    excess, why = excess_observed(summary)
    if "alpha_D" in second:
        lo, hi = second["alpha_D_range"]
        preds = [*preds, {"source": SECOND_THEORY, "d": None, "alpha_D": second["alpha_D"],
                          "lo": lo, "hi": hi}]  # fmt: skip
        obs = (excess["exponent"], *excess["exponent_ci95"]) if excess else (None, None, None)
        left_out = excluded_because(summary, excess=True)
        observed[SECOND_THEORY] = (EXCESS, obs, "; ".join(w for w in (left_out, why) if w))
    rows = []
    for p in preds:
        observable, (obs, olo, ohi), left_out = observed[p["source"]]
        rows.append({
            "excluded": left_out,
            "corpus": e.name,
            "kind": e.kind,
            "source": p["source"],
            "d": p["d"],
            "predicted_alpha_D": p["alpha_D"],
            "predicted_lo": p["lo"],
            "predicted_hi": p["hi"],
            "observed_alpha_D": obs,
            "observed_lo": olo,
            "observed_hi": ohi,
            "error": None if obs is None else p["alpha_D"] - obs,
            "observable": observable,
        })  # fmt: skip
    return rows


def _write_table(out: Path, rows: list[dict[str, Any]]) -> None:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=TABLE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(out / "table.csv", buf.getvalue())
    atomic_write_json(out / "table.json", rows)


def not_scored(n_plain: int, left_out: dict[str, str]) -> str:
    """The verdict where fewer than 2 corpora can be scored ('' otherwise): which were left
    out and why, in words."""
    if n_plain >= 2:
        return ""
    listed = "; ".join(f"{name}: {why}" for name, why in left_out.items())
    return (
        f"Not scored: {_corpora(n_plain)} can be scored and baselines need 2. Left out, never "
        f"replaced: {listed or 'none'}. The observed exponent is not observable at these "
        "budgets; a larger budget, or corpora that reach a power-law regime, can be scored."
    )


def _score(scored: list[dict], band: float, constant: float) -> dict[str, dict[str, Any]]:
    """`score_by_kind` once per observable (each source against the exponent it predicts,
    beside baselines computed on that same observable), merged by kind."""
    out: dict[str, dict[str, Any]] = {}
    for observable in (PLAIN, EXCESS):
        rows = [r for r in scored if r["observable"] == observable]
        observed = {r["corpus"]: r["observed_alpha_D"] for r in rows}
        if len(observed) < 2:
            continue  # no baseline without a second corpus
        by_source: dict[str, dict[str, float]] = {}
        for r in rows:
            by_source.setdefault(r["source"], {})[r["corpus"]] = r["predicted_alpha_D"]
        kinds = {r["corpus"]: r["kind"] for r in rows}
        for kind, scores in scoring.score_by_kind(
            observed, by_source, kinds, band, constant
        ).items():
            out.setdefault(kind, {}).update(scores)
    return out


def validate_many(
    out: str | Path,
    *,
    declaration: str | Path | None = None,
    inputs: list[str] | tuple[str, ...] = (),
    reference_models: list[str] | tuple[str, ...] = (),
    run: bool = True,
    workers: int = WORKERS,
    backend: Any = None,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Validate (or reuse) every corpus of `declaration` or `inputs`, score every source of
    d and the second theory against the baselines (all corpora, and each kind apart), write
    table, scores and report."""
    out = Path(out)
    doc = read_declaration(declaration) if declaration else {}
    if not declaration and not inputs:
        raise InputError("give a declaration file or at least one corpus or validate folder")
    items = entries(doc, out) if declaration else entries_from_inputs(list(inputs), out)
    refs = references(doc) if declaration else [(_validate_label(p), p) for p in reference_models]
    rules = doc.get("declaration", {})
    band = float(rules.get("band", scoring.BAND))
    constant = float(rules.get("constant", scoring.KAPLAN_ALPHA_D))
    pool = {"workers": workers, "backend": backend, "quiet": True}
    if run:
        preflight(out, items, refs, say)
    rows, extra = [], {}
    for e in items:
        summary = validated(e, refs, run, pool, say)
        cache = out / "cache" / e.name
        preds = predictions(_sources(e, summary, refs, cache), cache)
        stats = statistics(e, summary, doc, cache, say)
        second = second_theory(e, summary, cache, say)
        rows += _rows(e, summary, preds, stats, second)
        extra[e.name] = {"statistics": stats, "second_theory": second, "predictions": preds}
    # Observations the regime test or the convergence check flags are left out of every
    # score, and listed with the reason: never replaced.
    left_out = {r["corpus"]: r["excluded"] for r in rows
                if r["excluded"] and r["observable"] == PLAIN}  # fmt: skip
    left_out_excess = {r["corpus"]: r["excluded"] for r in rows
                       if r["excluded"] and r["observable"] == EXCESS}  # fmt: skip
    scored = [r for r in rows if not r["excluded"]]
    by_kind = _score(scored, band, constant)
    n_plain = len({r["corpus"] for r in scored if r["observable"] == PLAIN})
    if n_plain < 2:  # a measured outcome, not bad input: the table and the reasons stand
        say(f"{n_plain} of {len(items)} corpora can be scored; the rest are left out")
    result = {
        "primary": rules.get("primary"),
        "rules": rules,
        "band": band,
        "constant": constant,
        "n_boot": scoring.N_BOOT,
        "verdict": not_scored(n_plain, left_out) or scoring.verdict(by_kind["all"], band),
        "verdict_by_kind": {k: scoring.verdict(v, band) for k, v in by_kind.items()},
        "scores": by_kind.get("all", {}),
        "scores_by_kind": by_kind,
        "left_out": left_out,
        "left_out_excess": left_out_excess,
        "corpora": [{"name": e.name, "kind": e.kind, "folder": str(e.folder)} for e in items],
        "details": extra,
        "provenance": provenance(),
    }
    _write_table(out, rows)
    atomic_write_json(out / "scores.json", result)
    from scalelab.report.many import build_many_report

    result["report_html"], result["report_md"] = map(str, build_many_report(out, rows, result))
    return result
