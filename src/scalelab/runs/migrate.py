"""Saved folders of every scalelab version, read as this version writes them.

Every description file a command writes (a run's `config.json`, a sweep's `sweep.json`, a
validation's `pipeline.json`, an experiment's `experiment.json`) carries
`"scalelab_format": FORMAT`. `migrate(doc)` takes a file of any format to the current one,
one step per format, and is called wherever a saved folder is read (`runs.outdir.read_meta`,
the resume check, a sweep's run rows, `--config FILE`), so the code reads one layout and
knows one name per setting.

A step recognises each record in a file by keys only that record holds (its *signature*;
tests/test_runs_migrate.py checks each signature against every record in scalelab, so a
step never touches a record it does not mean). A file without the key is format 1.

Format 1 → 2:
- the three transformers name width, heads, layers and step budget as the LM does, `n_embd`,
  `n_head`, `n_layer`, `max_steps`: induction's `d_model` before (its config, an induction
  sweep's run parameters and rows), `width` in the formation, trained-separation and
  compare-depth configs (and the trained separation's `steps`), the manifold regressor's
  `d_embd`, `n_heads`, `n_blocks` (its config, a manifold sweep's config, run parameters and
  rows) and the fixed schedule's `steps`;
- the dtype of the models that measure d is saved as `dtype`, its field's name and the LM's
  (`precision` before, in an estimate's settings and a validation's `id`);
- fields added while format 1 was written get the value that reproduces what scalelab did
  before them: a stopping rule's `patience_fraction` and `min_delta_sd` 0 (patience alone,
  any improvement counted), an LM run's `init_from` None (from scratch), an estimate's
  `dtype` "auto" (the device's precision), a validation's `seeds_per_size` 1, a data
  sweep's `seeds` 1, and a manifold sweep's later fields the values it ran with before them
  (one init per run, no online-run extras, the patience rule's 25-step validation spacing,
  runs in grid order);
- a flat validation config (docs/benchmarks/cpu-hour/summary.json) has the flat option names
  of today (`context_len` → `train_block_size`, ...).

Format 2 → 3: a manifold sweep without `width_rule` ran at one width (False).

Format 3 → 4: a manifold sweep without `field_caps` capped every field at its largest n (none).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scalelab.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

#: The format this version writes.
FORMAT = 4
KEY = "scalelab_format"  # not "format": a token store's meta.json has its own

Doc = dict[str, Any]


def migrate(doc: Doc) -> Doc:
    """`doc` (a description file of any format) as this version writes it, without its
    format key. A file from a newer scalelab is refused with the fix."""
    version = doc.get(KEY, 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise InputError(f"saved format {version!r} is not a format number; restore the file")
    if version > FORMAT:
        raise InputError(
            f"saved by a newer scalelab (format {version}; this version reads up to {FORMAT}); "
            "upgrade scalelab to read it"
        )
    doc = {k: v for k, v in doc.items() if k != KEY}
    for step in STEPS[version - 1 :]:
        doc = _walk(doc, lambda record, step=step: _applied(record, step))
    return doc


def stamped(doc: Doc) -> Doc:
    """`doc` with this version's format key, as a description file is written."""
    return {**doc, KEY: FORMAT}


def renamed(row: Doc) -> Doc:
    """A run's result row of any version with this version's names (renamed only: a row
    holds what a run measured, so nothing is filled in). A row has no format key, and no
    name is reused, so renaming is safe at any version."""
    for step in STEPS:
        row = _walk(row, lambda record, step=step: _applied(record, step, fill=False))
    return row


def migrate_table(table: pd.DataFrame) -> pd.DataFrame:
    """A runs table written by any version, with this version's column names (`renamed`)."""
    names = list(renamed(dict.fromkeys(table.columns)))
    return table if names == list(table.columns) else table.set_axis(names, axis=1)


def _walk(value: Any, step: Callable[[Doc], Doc]) -> Any:
    """`step` applied to every record in `value`, innermost first."""
    if isinstance(value, dict):
        return step({k: _walk(v, step) for k, v in value.items()})
    if isinstance(value, list):
        return [_walk(v, step) for v in value]
    return value


def _applied(record: Doc, step: tuple[Entry, ...], *, fill: bool = True) -> Doc:
    """`record` with each entry of `step` whose signature it holds: keys renamed in place
    (the order kept), then (`fill`) the missing ones filled."""
    for signature, renames, fills in step:
        if signature <= record.keys():
            record = {renames.get(k, k): v for k, v in record.items()}
            if fill:
                record |= {k: v for k, v in fills.items() if k not in record}
    return record


#: A step's entry: a record's signature, its renamed keys (old → new) and filled keys.
Entry = tuple[set[str], dict[str, str], dict[str, Any]]

_FORMATION: Entry = ({"alphabet_size", "width", "n_head", "score_samples"}, {"width": "n_embd"}, {})
_TRAINED_SEPARATION: Entry = (
    {"width", "bits", "rel_distances", "train_n", "steps"},
    {"width": "n_embd", "steps": "max_steps"},
    {},
)
_DEPTH: Entry = ({"block_size", "width", "n_head", "icl_windows"}, {"width": "n_embd"}, {})
_BEFORE_NOISE_AWARE_STOP = {"patience_fraction": 0.0, "min_delta_sd": 0.0}
_INDUCTION_WIDTH: Entry = ({"n_layer", "n_head", "d_model"}, {"d_model": "n_embd"}, {})
_STOP_RULE_LM: Entry = ({"patience", "grad_accum"}, {}, _BEFORE_NOISE_AWARE_STOP)
_STOP_RULE_SCHEDULE: Entry = ({"patience", "max_epochs"}, {}, _BEFORE_NOISE_AWARE_STOP)
_LM_TRAIN: Entry = ({"grad_accum", "warmup_steps"}, {}, {"init_from": None})
_ESTIMATE: Entry = ({"per_doc", "k"}, {"precision": "dtype"}, {"dtype": "auto"})
_DATA_SWEEP: Entry = ({"data_dir", "sizes", "model", "train", "schedule"}, {}, {"seeds": 1})
_MANIFOLD_WIDTH = {"n_blocks": "n_layer", "n_heads": "n_head", "d_embd": "n_embd"}
_MANIFOLD_SWEEP: Entry = (
    {"manifold", "dims", "betas", "n_values"},
    _MANIFOLD_WIDTH,
    {
        "online_seeds": [],
        "online_step_growth": 0.0,
        "online_long_factor": 0,
        "online_only": False,
        "min_eval_steps": 25,
        "ensemble": 1,
        "by_curve": False,
    },
)
_REGRESSOR: Entry = ({"D", "n_blocks", "n_heads", "d_embd"}, _MANIFOLD_WIDTH, {})
_FIXED_SCHEDULE: Entry = ({"batch_size", "steps", "n_evals"}, {"steps": "max_steps"}, {})
_MANIFOLD_RUN: Entry = ({"task", "manifold", "d_embd"}, {"d_embd": "n_embd"}, {})
_PIPELINE: Entry = ({"points", "min_tokens", "max_tokens", "train"}, {}, {"seeds_per_size": 1})
_FLAT_PIPELINE: Entry = (
    {"corpus", "min_tokens", "max_tokens", "points", "context_len"},
    {
        "context_len": "train_block_size",
        "batch_size": "train_batch_size",
        "lr": "train_lr",
        "min_lr": "train_min_lr",
        "eval_interval": "train_eval_interval",
        "eval_batches": "train_eval_batches",
        "test_tokens": "train_test_tokens",
        "model_tokens": "model_sweep_tokens",
        "id_precision": "id_dtype",
    },
    {},
)
#: Format 1 → 2's records: what each is known by, renamed and filled in.
TO_2 = (
    _INDUCTION_WIDTH,
    _FORMATION,
    _TRAINED_SEPARATION,
    _DEPTH,
    _STOP_RULE_LM,
    _STOP_RULE_SCHEDULE,
    _LM_TRAIN,
    _ESTIMATE,
    _DATA_SWEEP,
    _MANIFOLD_SWEEP,
    _REGRESSOR,
    _FIXED_SCHEDULE,
    _MANIFOLD_RUN,
    _PIPELINE,
    _FLAT_PIPELINE,
)


#: Format 2 → 3's records.
TO_3 = (({"manifold", "dims", "betas", "n_values"}, {}, {"width_rule": False}),)

#: Format 3 → 4's records.
TO_4 = (({"manifold", "dims", "betas", "n_values"}, {}, {"field_caps": []}),)

#: STEPS[v - 1] takes format v to v + 1.
STEPS: tuple[tuple[Entry, ...], ...] = (TO_2, TO_3, TO_4)
