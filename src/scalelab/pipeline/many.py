"""`scalelab validate-many`: every source of d scored as a predictor of alpha_D across corpora.

For each corpus: run `validate` (or reuse a folder whose summary.json exists: read, never
rerun), then collect the prediction of every predictor declared in `pipeline.predictors`
(`PREDICTORS`: each reference model's d at the protocol's batch size, extrapolated in batch
size, the calibrated MLE on the same points; the second theory's γ/(2β) with its authors'
instruments and with the earlier one). Each is scored on the observable it predicts (the plain
slope, or the exponent of the excess loss), beside baselines computed on that observable.
Scores (`laws.compare.baselines`) put each source beside four baselines that ignore d (the
constant 0.095, the leave-one-out mean, its mean within the corpus's kind, the leave-one-out
median) with paired bootstrap intervals over corpora, on all corpora and on real and synthetic
corpora apart. Writes OUT/table.csv and .json (one row per corpus and source), OUT/scores.json,
OUT/report/report.html and .md; the slower derived numbers (calibrated d, statistics) are
cached per corpus under OUT/cache/. A new source of d: docs/sources.md.
"""

from __future__ import annotations

import csv
import io
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scalelab.errors import InputError, ScalelabError
from scalelab.io import atomic_write_json, atomic_write_text, provenance, read_json
from scalelab.laws.compare import baselines as scoring
from scalelab.pipeline.declaration import (
    CONFIG,
    SUMMARY,
    Entry,
    entries,
    entries_from_inputs,
    read_declaration,
    references,
)
from scalelab.pipeline.predictors import (
    EXCESS,
    PLAIN,
    Corpus,
    Prediction,
    predict_corpus,
)
from scalelab.pipeline.results import Summary
from scalelab.runs import outdir
from scalelab.runs.sweep import WORKERS

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
        request = outdir.read_meta(e.folder / CONFIG)
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
    from scalelab.probe.references import sensitivity, summarize
    from scalelab.probe.result import read_estimate

    doc = read_estimate(folder / RESULT)
    cfg = EstimateConfig(k=doc.settings["k"], batch_size=doc.settings["batch_size"])
    x, _ = load_embeddings(folder / EMBEDDINGS)
    row = summarize(label, doc, sensitivity(x, cfg))
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
    for s in summary.references:
        row = {**s, "label": rename.get(s["label"], s["label"])}
        row.setdefault("points", str(folders.get(s["label"], "")))
        rows.append(row)
    rows += [_estimate_source(lbl, Path(f), cache) for lbl, f in e.estimates.items()]
    return rows


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
    from scalelab.laws.regime.analysis import outcome_of, power_words
    from scalelab.laws.regime.rules import POWER_LAW

    regime = summary.fits["data"].get("regime")
    check = summary.checks.get("data") or {}
    why = []
    if regime is not None:
        own = excess and bool(outcome_of(regime, excess=True))
        outcome = outcome_of(regime, excess=own)
        if outcome != POWER_LAW:
            power = power_words(regime, excess=own)
            why.append(outcome + (f" ({power})" if power else ""))
    why += [label.lower() for label in check.get("labels", [])]
    return "; ".join(why)


def _observed(summary: Summary, observable: str) -> tuple[tuple, str]:
    """(observed exponent, lo, hi) of one observable, and why it is left out ('' if not)."""
    if observable == EXCESS:
        excess, why = excess_observed(summary)
        obs = (excess["exponent"], *excess["exponent_ci95"]) if excess else (None, None, None)
        left_out = excluded_because(summary, excess=True)
        return obs, "; ".join(w for w in (left_out, why) if w)
    # the plain slope over the fit range by rule; a folder from before the regime test has
    # only the fit over every size
    fit = (summary.fits["data"].get("regime") or {}).get("plain")
    fit = fit or summary.fits["data"]["power"]
    return (fit["exponent"], *fit["exponent_ci95"]), excluded_because(summary)


def _rows(e: Entry, summary: Summary, preds: list[tuple[str, Prediction]]) -> list[dict[str, Any]]:
    seen = {o: _observed(summary, o) for o in dict.fromkeys(o for o, _ in preds)}
    rows = []
    for observable, p in preds:
        (obs, olo, ohi), left_out = seen[observable]
        rows.append({
            "excluded": left_out,
            "corpus": e.name,
            "kind": e.kind,
            "source": p.source,
            "d": p.d,
            "predicted_alpha_D": p.alpha_D,
            "predicted_lo": p.lo,
            "predicted_hi": p.hi,
            "observed_alpha_D": obs,
            "observed_lo": olo,
            "observed_hi": ohi,
            "error": None if obs is None else p.alpha_D - obs,
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
        corpus = Corpus(e, summary, _sources(e, summary, refs, cache), cache, doc, say)
        preds, extra[e.name] = predict_corpus(corpus)
        rows += _rows(e, summary, preds)
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
