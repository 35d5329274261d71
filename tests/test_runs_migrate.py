"""runs.migrate: every saved format read as this version writes it. The truth is the files
earlier versions wrote: literal format-1 documents (as a run, a sweep and a validation saved
them), the committed folders under docs/benchmarks, and folders trained here, then rewritten
as format 1 saved them, which must resume without training again."""

from __future__ import annotations

import dataclasses
import importlib
import json
import pkgutil
import shutil
import typing
from pathlib import Path

import pandas as pd
import pytest

import scalelab
from scalelab.config import Record, saved_key
from scalelab.errors import ConfigError, InputError
from scalelab.induction.config import InductionConfig, InductionTrainConfig
from scalelab.induction.train import load_induction_model, train_induction
from scalelab.lm.config import GPTConfig, TrainConfig
from scalelab.lm.stopping import StopRule
from scalelab.manifold.plan import config_from_json
from scalelab.pipeline.config import PipelineConfig
from scalelab.pipeline.results import Summary
from scalelab.runs import outdir
from scalelab.runs.migrate import FORMAT, KEY, STEPS, migrate, migrate_table, renamed, stamped
from scalelab.sweeps.data import DataSweepConfig
from scalelab.sweeps.schedule import Schedule

REPO = Path(__file__).resolve().parents[1]


def _records() -> list[type[Record]]:
    for info in pkgutil.walk_packages(scalelab.__path__, "scalelab."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    found, todo = set(), [Record]
    while todo:
        for sub in todo.pop().__subclasses__():
            found.add(sub)
            todo.append(sub)
    return sorted(found, key=lambda c: f"{c.__module__}.{c.__qualname__}")


def _saved_keys(cls: type[Record]) -> set[str]:
    """The keys a record's JSON holds at its own level (a flat field: its record's keys)."""
    keys: set[str] = set()
    for f in dataclasses.fields(cls):
        if f.metadata.get("flat"):
            kind = typing.get_type_hints(cls, localns=NAMES)[f.name]
            keys |= {saved_key(g) for g in dataclasses.fields(kind)}
        else:
            keys.add(saved_key(f))
    return keys


RECORDS = _records()
NAMES = {c.__name__: c for c in RECORDS}  # for hints imported only for type checking
ENTRIES = [entry for step in STEPS for entry in step]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: "+".join(sorted(e[0])))
def test_a_signature_touches_only_records_that_hold_what_it_writes(entry) -> None:
    """A record whose keys hold a signature (in today's names) has every key the entry
    fills and renames to; a renaming entry's signature (the old names) fits no record of
    today, so a file of today is never renamed."""
    signature, renames, fills = entry
    today = {renames.get(k, k) for k in signature}
    holders = [c for c in RECORDS if today <= _saved_keys(c)]
    for cls in holders:
        missing = (set(fills) | set(renames.values())) - _saved_keys(cls)
        assert not missing, f"{cls.__name__} would get {missing}"
    if fills:
        assert holders, "a fill for no record of today"
    if renames:
        assert not [c for c in RECORDS if signature | set(renames) <= _saved_keys(c)]


def test_format_1_lm_run_config_reads_with_the_values_that_reproduce_it() -> None:
    now = TrainConfig(stop=StopRule(4), init_from=None).to_dict()
    old = {k: v for k, v in now.items() if k not in ("patience_fraction", "min_delta_sd")}
    old.pop("init_from")
    read = migrate({"model": {"n_layer": 1}, "train": old, "data_dir": "d"})["train"]
    assert TrainConfig.from_dict(read).stop == StopRule(4, 0.0, 0.0)
    assert read["init_from"] is None and list(read)[: len(old)] == list(old)


def test_format_1_induction_configs_and_rows_name_the_width_n_embd() -> None:
    model = InductionConfig(n_layer=1, n_head=2, n_embd=16)
    old = {("d_model" if k == "n_embd" else k): v for k, v in model.to_dict().items()}
    assert list(old).index("d_model") == list(model.to_dict()).index("n_embd")
    assert InductionConfig.from_dict(migrate({"model": old})["model"]) == model
    row = {"n_layer": 2, "n_head": 1, "d_model": 12, "acc": 1.0}
    assert renamed(row) == {"n_layer": 2, "n_head": 1, "n_embd": 12, "acc": 1.0}
    table = migrate_table(pd.DataFrame([row, {**row, "d_model": 24}]))
    assert list(table.columns) == ["n_layer", "n_head", "n_embd", "acc"]
    assert table["n_embd"].tolist() == [12, 24]


def test_format_1_pipeline_and_data_sweep_configs_read_as_saved() -> None:
    cfg = PipelineConfig.from_preset("quick")
    old = cfg.to_dict()
    del old["seeds_per_size"]
    old["id"] = {("precision" if k == "dtype" else k): v for k, v in old["id"].items()}
    for part in ("train", "schedule"):
        old[part] = {k: v for k, v in old[part].items() if k != "min_delta_sd"}
    assert PipelineConfig.from_dict(migrate(old)) == cfg
    outdir.same_config(old, cfg, "old")  # resumes
    parts = {"model": GPTConfig(), "train": TrainConfig(), "schedule": Schedule()}
    saved = {"data_dir": "d", "sizes": [10, 20], **{k: v.to_dict() for k, v in parts.items()}}
    assert migrate(saved)["seeds"] == 1  # a data sweep of format 1: one seed per size
    outdir.same_config(saved, {**saved, "seeds": 1}, "old")
    with pytest.raises(ConfigError, match=r"seeds: saved=1 now=2"):
        outdir.same_config(saved, {**saved, "seeds": 2}, "old")
    seeds = {f.name: f for f in dataclasses.fields(DataSweepConfig)}["seeds"]
    assert seeds.default == 1 and not seeds.metadata  # format 2 writes it


def test_the_committed_flat_summary_reads() -> None:
    path = REPO / "docs" / "benchmarks" / "cpu-hour"
    if not (path / "summary.json").is_file():
        pytest.skip("no committed flat summary")
    flat = json.loads((path / "summary.json").read_text())["config"]
    cfg = Summary.load(path).config
    assert (cfg.train.block_size, cfg.train.lr, cfg.id.dtype) == (
        flat["context_len"],
        flat["lr"],
        flat["id_precision"],
    )
    assert cfg.model_sweep.models == tuple(flat["model_sweep"])


COMMITTED_MANIFOLD = sorted((REPO / "docs" / "benchmarks").glob("manifold*/sweep.json"))


def test_the_committed_manifold_sweeps_hold_format_1() -> None:
    if not COMMITTED_MANIFOLD:
        pytest.skip("no committed manifold sweep")
    saved = [json.loads(p.read_text()) for p in COMMITTED_MANIFOLD]
    assert any(KEY not in meta and "d_embd" in meta["config"] for meta in saved)


@pytest.mark.parametrize("path", COMMITTED_MANIFOLD, ids=lambda p: p.parent.name)
def test_a_committed_manifold_sweep_resumes(path: Path, tmp_path: Path) -> None:
    """The config this version builds from a committed sweep.json (of either format; format 1
    ones written before the plan's later fields, and before the regressor's names of today)
    is the one its folder is resumed with."""
    cfg = config_from_json(outdir.read_meta(path)["config"])
    copy = tmp_path / "sweep"
    copy.mkdir()
    shutil.copy(path, copy / "sweep.json")
    outdir.check(copy, "sweep.json", cfg, kind="manifold")  # no refusal: it resumes
    with pytest.raises(ConfigError, match=r"ensemble: saved=\d+ now=9"):
        outdir.check(copy, "sweep.json", cfg.replace(ensemble=9), kind="manifold")


def test_a_new_folder_is_stamped_and_a_newer_format_refused(tmp_path: Path) -> None:
    cfg = TrainConfig()
    outdir.claim(tmp_path / "run", "config.json", {"train": cfg})
    outdir.release_all()
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved[KEY] == FORMAT and outdir.read_meta(tmp_path / "run" / "config.json") == {
        "train": cfg.to_dict()
    }
    assert stamped({"a": 1}) == {"a": 1, KEY: FORMAT}
    (tmp_path / "run" / "config.json").write_text(json.dumps({**saved, KEY: FORMAT + 1}))
    with pytest.raises(InputError, match=rf"newer scalelab \(format {FORMAT + 1}.*upgrade"):
        outdir.check(tmp_path / "run", "config.json", {"train": cfg})
    with pytest.raises(InputError, match="not a format number"):
        migrate({KEY: "2"})


def test_a_format_1_induction_run_folder_is_taken_and_a_changed_one_refused(
    tmp_path: Path,
) -> None:
    """An induction run folder is trained again on every call (its runs take seconds); one
    saved as format 1 is taken for the same config and gives the same result, and a changed
    width is refused by its name of today."""
    model = InductionConfig(alphabet_size=3, max_len=9, n_layer=1, n_head=1, n_embd=4)
    train = InductionTrainConfig(n=9, max_steps=4, eval_interval=2, eval_samples=16)
    run = tmp_path / "run"
    _, result = train_induction(model, train, run)
    config = json.loads((run / "config.json").read_text())
    assert config.pop(KEY) == FORMAT
    config["model"] = {("d_model" if k == "n_embd" else k): v for k, v in config["model"].items()}
    (run / "config.json").write_text(json.dumps(config))  # as format 1 saved it
    assert load_induction_model(run).cfg == model
    _, again = train_induction(model, train, run)
    untimed = lambda r: {k: v for k, v in r.items() if not k.endswith("time_s")}  # noqa: E731
    assert untimed(again) == untimed(result)
    (run / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConfigError, match=r"model\.n_embd: saved=4 now=8"):
        train_induction(model.replace(n_embd=8), train, run)


def test_a_format_1_estimate_folder_is_reused_for_the_same_request(tmp_path: Path) -> None:
    """estimate.json (a result, read through `read_meta`) of format 1 saved the dtype as
    `precision`: the same request today reuses it, another dtype is refused by name."""
    from scalelab.probe.config import EstimateConfig
    from scalelab.probe.estimate import finished_estimate

    request = {"model": "/m", "corpus": "c", "weights": None, **EstimateConfig().to_dict()}
    old = {("precision" if k == "dtype" else k): v for k, v in request.items()}
    (tmp_path / "estimate.json").write_text(json.dumps({"request": old, "dimension": 9.5}))
    saved = finished_estimate(tmp_path / "estimate.json", request)
    assert saved is not None and saved["dimension"] == 9.5
    with pytest.raises(ConfigError, match=r"dtype: saved='auto' now='float32'"):
        finished_estimate(tmp_path / "estimate.json", {**request, "dtype": "float32"})
