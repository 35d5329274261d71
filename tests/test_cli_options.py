"""Options derived from configs (`scalelab.cli.options`): a config field is the one place an
option is defined (name, type, default, help); the command gets the config built from the
defaults or a preset, then `--config FILE`, then the options given; a refusal names the option
given, or the file."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from scalelab.cli import main
from scalelab.cli.options import From, derive
from scalelab.config import Config, option, saved_as
from scalelab.errors import ConfigError
from scalelab.probe.config import EstimateConfig


@dataclasses.dataclass(frozen=True)
class Toy(Config):
    width: int = option(8, "Width of the toy.")
    n_docs: int | None = option(None, "Documents (default: all).", flag="--docs")
    sizes: tuple[int, ...] = option((1, 2), "Sizes, comma-separated.")
    dtype: str = option("auto", "auto or float32.", retired="--precision", **saved_as("prec"))
    fast: bool = option(False, "Go fast.")
    bits: tuple[int | None, ...] = option((None,), "Bits (empty: none).", blank=(None,))

    def validate(self) -> None:
        if self.width < 1:
            raise ConfigError(f"width must be >= 1, got {self.width}")
        if self.dtype not in ("auto", "float32"):
            raise ConfigError(f"dtype {self.dtype!r}: auto or float32")


PRESETS = {"big": Toy(width=64)}
seen: list[Toy] = []


def toy_command(
    name: str = typer.Option("x", "--name"),
    cfg: Toy = From(Toy, presets=PRESETS, retired_presets={"--big": "big"}),
):
    """A toy command."""
    seen.append(cfg)


def run(*args: str) -> tuple[int, str, Toy | None]:
    app = typer.Typer(add_completion=False, rich_markup_mode=None)
    app.command("toy")(derive(toy_command))
    app.command("other")(lambda: None)  # two commands: the app is a group
    seen.clear()
    got = CliRunner().invoke(app, ["toy", *map(str, args)])
    message = got.output + str(got.exception or "")
    return got.exit_code, message, seen[0] if seen else None


def test_options_come_from_the_fields() -> None:
    code, out, _ = run("--help")
    assert code == 0
    for text in ("--width", "Width of the toy.", "[default: 8]", "--docs", "--sizes", "1,2"):
        assert text in out
    assert "--fast / --no-fast" in out and "--config" in out and "--preset" in out
    assert "--precision" not in out and "--n-docs" not in out


def test_given_options_set_the_config() -> None:
    code, _, cfg = run("--width", "3", "--docs", "5", "--sizes", "4,8", "--fast")
    assert code == 0 and cfg == Toy(width=3, n_docs=5, sizes=(4, 8), fast=True)
    assert run()[2] == Toy()
    assert run("--bits", "4,8")[2].bits == (4, 8)  # ints, though the tuple may hold None
    assert run("--bits", "")[2].bits == (None,)
    assert "--bits must be comma-separated integers, got '4,x'" in run("--bits", "4,x")[1]


def test_preset_then_file_then_options(tmp_path: Path) -> None:
    file = tmp_path / "c.toml"
    file.write_text('width = 5\nsizes = [3]\ndtype = "float32"\n')
    assert run("--preset", "big")[2] == Toy(width=64)
    assert run("--preset", "big", "--config", file)[2] == Toy(width=5, sizes=(3,), dtype="float32")
    assert run("--preset", "big", "--config", file, "--width", "7")[2].width == 7
    saved = tmp_path / "config.json"  # the keys a saved config holds, `saved_as` ones included
    Toy(width=2, dtype="float32").save(saved)
    assert json.loads(saved.read_text())["prec"] == "float32"
    assert run("--config", saved)[2] == Toy(width=2, dtype="float32")


def test_refusals_name_the_option_or_the_file(tmp_path: Path) -> None:
    assert run("--width", "0")[1].startswith("--width 0: width must be >= 1")
    bad = tmp_path / "bad.json"
    bad.write_text('{"width": 0}')
    assert run("--config", bad)[1].startswith(f"--config {bad}: width must be >= 1")
    bad.write_text('{"height": 1}')
    assert "unknown Toy field(s) ['height']" in run("--config", bad)[1]
    bad.write_text("[1, 2]")
    assert "expected a table of settings" in run("--config", bad)[1]
    assert "unknown preset 'huge' (--preset)" in run("--preset", "huge")[1]


def test_retired_spelling_sets_the_field() -> None:
    code, out, cfg = run("--precision", "float32")
    assert code == 0 and cfg.dtype == "float32" and "--precision is deprecated" in out


def test_retired_preset_switch_chooses_its_preset() -> None:
    code, out, cfg = run("--big", "--width", "3")
    assert code == 0 and cfg == Toy(width=3)  # the preset, then the option given
    assert "note: --big is deprecated; use --preset big" in out
    assert run("--big")[2] == PRESETS["big"]
    assert "--big" not in run("--help")[1]


def test_a_name_given_twice_is_refused_when_the_command_is_made() -> None:
    def clash(width: int = 1, cfg: Toy = From(Toy)) -> None: ...

    with pytest.raises(TypeError, match="width"):
        derive(clash)


def _estimate_config(args: list[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """The EstimateConfig `scalelab estimate` builds from `args` (the probe stubbed out)."""
    import scalelab.probe.estimate as probe

    got = []

    def fake(model: str, corpus: Any, cfg: EstimateConfig, out: Path, **kw: Any) -> None:
        got.append(cfg)
        raise ConfigError("stop")

    monkeypatch.setattr(probe, "estimate", fake)
    with pytest.raises(SystemExit):
        main(["estimate", "--model", "m", *args])
    return got[0]


def test_estimate_reads_a_saved_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """estimate's --config reads the settings estimate.json saves (of format 1 too, with the
    dtype under its older key `precision`), and an option given beside it wins."""
    saved = EstimateConfig(k=7, per_doc=5, dtype="float32", max_documents=3)
    (tmp_path / "c.json").write_text(json.dumps(saved.to_dict()))
    got = _estimate_config(["--config", str(tmp_path / "c.json")], monkeypatch)
    assert got == saved
    old = {("precision" if k == "dtype" else k): v for k, v in saved.to_dict().items()}
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert _estimate_config(["--config", str(tmp_path / "old.json")], monkeypatch) == saved
    got = _estimate_config(["--config", str(tmp_path / "c.json"), "--k", "9"], monkeypatch)
    assert got == saved.replace(k=9)
    (tmp_path / "c.toml").write_text('k = 11\nmax_documents = 4\ndtype = "bfloat16"\n')
    got = _estimate_config(["--config", str(tmp_path / "c.toml")], monkeypatch)
    assert got == EstimateConfig(k=11, max_documents=4, dtype="bfloat16")


def test_a_library_refusal_names_the_field_as_the_caller_gave_it() -> None:
    """Python callers read the name they passed; the command line reads its option."""
    from scalelab.cli.options import as_given
    from scalelab.pipeline.config import PipelineConfig

    with pytest.raises(ConfigError, match=r"^id_batch_size 5: batch size 5 must exceed K"):
        PipelineConfig.from_options(id_batch_size=5)
    with pytest.raises(ConfigError, match=r"^min_tokens 900, max_tokens 800: need 0 < min"):
        PipelineConfig.from_options(min_tokens=900, max_tokens=800)
    flags = {"id_batch_size": "--id-batch-size", "points": "--points", "model": "--model"}
    assert as_given("id_batch_size 5: raise it", flags) == "--id-batch-size 5: raise it"
    assert (
        as_given("check in [0, points 9]; 3 points", flags) == "check in [0, --points 9]; 3 points"
    )
    assert as_given("points must be >= 3", flags) == "--points must be >= 3"


def _validate_config(args: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    import scalelab.pipeline.run as pipeline_run

    got = []

    def fake(out: Path, cfg: Any, **kw: Any) -> None:
        got.append(cfg)
        raise ConfigError("stop")

    monkeypatch.setattr(pipeline_run, "run_pipeline", fake)
    with pytest.raises(SystemExit):
        main(["validate", "--corpus", "c", "--out", str(tmp_path / "o"), *args])
    return got[0]


def test_validate_reads_a_saved_config_or_flat_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """validate's --config reads a saved PipelineConfig (pipeline.json's nesting) or the flat
    names of a declaration; the preset comes first, options given last."""
    from scalelab.pipeline.config import PipelineConfig

    saved = PipelineConfig.from_preset("quick", id_batch_size=512, points=4)
    (tmp_path / "p.json").write_text(json.dumps(saved.to_dict()))
    got = _validate_config(["--config", str(tmp_path / "p.json")], monkeypatch, tmp_path)
    assert got == saved.replace(corpus="c")
    (tmp_path / "f.toml").write_text("id_batch_size = 1024\npoints = 6\n")
    args = ["--preset", "quick", "--config", str(tmp_path / "f.toml"), "--points", "5"]
    got = _validate_config(args, monkeypatch, tmp_path)
    want = PipelineConfig.from_preset("quick", corpus="c", id_batch_size=1024, points=5)
    assert got == want


def test_induction_train_reads_a_run_config_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One file, two configs: `induction train --config` reads a run's config.json, its
    "model" and "train" keys; the model is built for the training length `--n`."""
    import scalelab.induction.train as induction_train
    from scalelab.induction.config import InductionConfig, InductionTrainConfig

    got = []

    def fake(model: Any, training: Any, out: Path, **kw: Any) -> None:
        got.append((model, training))
        raise ConfigError("stop")

    monkeypatch.setattr(induction_train, "train_induction", fake)
    model, training = InductionConfig(n_layer=1, n_embd=32), InductionTrainConfig(max_steps=5)
    run = {"model": model.to_dict(), "train": training.to_dict()}
    (tmp_path / "config.json").write_text(json.dumps(run))
    args = ["induction", "train", "--out", str(tmp_path / "o"), "--config"]
    with pytest.raises(SystemExit):
        main([*args, str(tmp_path / "config.json"), "--n", "16"])
    assert got[0] == (model.replace(max_len=16), training.replace(n=16))
