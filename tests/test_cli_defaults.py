"""One default per option. A command whose options are derived from its config
(`cli.options.From`: `DERIVED`) has nothing to compare: its options are the fields. For the
commands whose options are still written by hand (`CHECKED`), every option that sets a field
of a config dataclass (or a parameter of the library function the command calls) has that
field's default, so the CLI and a notebook user get the same run: the test walks every
command of `scalelab` (the lazy group of scalelab.cli and its subgroups) and compares
defaults by name, through a small table where the option's name differs from the field's.
And each shared default is written as a literal once (`ONE_PLACE`)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scalelab.cli import COMMANDS, load_command
from scalelab.cli.induction import EXPERIMENTS
from scalelab.intrinsic.protocol import make_estimator
from scalelab.pipeline.many import validate_many
from scalelab.probe.dimension import dimension_and_exponents

Source = Any  # a dataclass instance, a function (its keyword defaults) or a dict
# Options that say where and how a command runs, not what it computes.
CONTROLS = {"quiet", "json_out", "threads", "device", "backend", "ray_address", "references"}

# command -> (where its defaults live, first match wins; option -> field where the names
# differ, None for an option that is not the field of the same name; options whose None
# default defers to another source, e.g. a preset).
CHECKED: dict[str, tuple[list[Source], dict[str, str | None], set[str]]] = {
    "id": ([make_estimator, dimension_and_exponents], {}, set()),
    "validate-many": ([validate_many], {"inputs": None}, set()),  # positional: none given
}
# Commands with no config behind their options (every option a preset override, or a
# small check whose settings are its own).
UNCHECKED = {
    "report",
    "corpus list",
    "corpus info",
    "induction solve",
    "induction generate",
    "induction evaluate",
    "induction construct",
    "induction protocol",
    "manifold combine",  # its inputs are folders; the rules are the sweeps' own configs
    "manifold select",  # the same
}


# Commands whose config options are derived from the config's fields (cli.options.From): one
# definition, nothing to compare; each reads --config FILE.
DERIVED = {
    "estimate",
    "ablate layers",
    "ablate positions",
    "ablate models",
    "ablate batch-size",
    "train",
    "sweep data",
    "sweep model",
    "induction gather",
    "induction heads",
    *(f"induction {name}" for name in EXPERIMENTS),  # cli.experiment: From(EXPERIMENT.config)
    "validate",
    "demo",
    "induction sweep",
    "induction train",
    "manifold sweep",
    "manifold sample",
    "manifold levers",
    "manifold construct",
    "forecast",
    "corpus prepare",
    "fit",
    "exponents",
}
# Derived, without --config FILE: the family's own settings are --param NAME=VALUE.
DERIVED_NO_FILE = {"corpus synth"}


def commands() -> Iterator[tuple[str, Any]]:
    """(full name, click command) of every leaf command, loading the lazy ones."""

    def walk(name: str, cmd: Any) -> Iterator[tuple[str, Any]]:
        if hasattr(cmd, "list_commands"):  # through its listing: a group may load lazily too
            ctx = cmd.context_class(cmd)
            for sub in cmd.list_commands(ctx):
                yield from walk(f"{name} {sub}", cmd.get_command(ctx, sub))
        else:
            yield name, cmd

    for name in COMMANDS:
        yield from walk(name, load_command(name))


def defaults(source: Source) -> dict[str, Any]:
    if dataclasses.is_dataclass(source):
        return {f.name: getattr(source, f.name) for f in dataclasses.fields(source)}
    if isinstance(source, dict):
        return source
    return {
        k: p.default
        for k, p in inspect.signature(source).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def as_cli(value: Any) -> Any:
    """A field default as the CLI writes it: tuples as comma-separated text (None dropped)."""
    if isinstance(value, tuple | list):
        return ",".join(str(v) for v in value if v is not None)
    return value


def mismatches(name: str, cmd: Any) -> tuple[list[str], int]:
    """The options of `cmd` whose default differs from its field's, and how many matched."""
    sources, renames, deferred = CHECKED[name]
    known = [defaults(s) for s in sources]
    for field in renames.values():
        assert field is None or any(field in d for d in known), f"{name}: no field {field}"
    wrong, checked = [], 0
    for param in cmd.params:
        field = renames.get(param.name, param.name)
        if field is None or param.required or param.name in CONTROLS | deferred:
            continue
        where = next((d for d in known if field in d), None)
        if where is None:
            continue
        checked += 1
        if param.default != as_cli(where[field]):
            wrong.append(f"{name} --{param.name}: {param.default!r} != {where[field]!r}")
    return wrong, checked


ALL = dict(commands())


def test_every_command_is_classified() -> None:
    assert set(ALL) == set(CHECKED) | UNCHECKED | DERIVED | DERIVED_NO_FILE


@pytest.mark.parametrize("name", sorted(DERIVED))
def test_derived_commands_read_a_config_file(name: str) -> None:
    assert "config_file" in {p.name for p in ALL[name].params}


@pytest.mark.parametrize("name", sorted(CHECKED))
def test_cli_defaults_equal_the_config_defaults(name: str) -> None:
    wrong, checked = mismatches(name, ALL[name])
    assert not wrong
    assert checked >= 1, f"{name}: no option was compared; is the table stale?"


# One definition per default (docs/sweeps.md): these values may be written as literals only at
# their one place; everywhere else reads the constant or the field. (name, value) -> the files
# allowed to hold it. A second literal (a new `workers=2`, `k=20`, `batch_size=4096`, ...) fails.
ONE_PLACE: dict[tuple[str, float], set[str]] = {
    ("workers", 2): {"runs/sweep.py"},  # WORKERS: validate's, the demo's, validate-many's
    ("eval_interval", 100): {
        "lm/config.py",  # TrainConfig: one `scalelab train` run
        "induction/compare_depth.py",  # induction compare-depth's own runs (a command of its own)
    },
    ("eval_interval", 50): {
        "sweeps/schedule.py",  # EVAL_INTERVAL: `scalelab sweep`, the gpu validate preset
        "induction/config.py",  # the induction task's own trainer (a command of its own)
    },
    ("eval_interval", 25): {"pipeline/config.py"},  # TrainPart: validate's runs
    ("factor", 3): {"sweeps/check.py"},  # FACTOR: the check's stricter rule
    ("width_factor", 2): {"sweeps/check.py"},  # WIDTH_FACTOR: the check's wider model
    ("k", 20): {"intrinsic/__init__.py"},  # PAPER_K
    ("batch_size", 4096): {"intrinsic/__init__.py"},  # PAPER_BATCH_SIZE
    # the sweeps' stopping rule (sweeps.schedule.CONVERGE; lm/stopping.py owns its fields)
    ("patience", 4): {"sweeps/schedule.py"},
    ("patience_fraction", 0.25): {"sweeps/schedule.py"},
}
ALIASES = {
    "WORKERS": "workers",
    "EVAL_INTERVAL": "eval_interval",
    "FACTOR": "factor",
    "WIDTH_FACTOR": "width_factor",
    "PAPER_K": "k",
    "PAPER_BATCH_SIZE": "batch_size",
    # a validate preset's flat option names (pipeline.config.FLAT) for the same fields
    "train_eval_interval": "eval_interval",
    "check_factor": "factor",
    "check_width_factor": "width_factor",
    "id_k": "k",
    "id_batch_size": "batch_size",
}
SRC = Path(__file__).resolve().parents[1] / "src" / "scalelab"


def named_int_literals(tree: ast.AST) -> Iterator[tuple[str, float, int]]:
    """(name, value, line) of every number literal bound to a name: a parameter default
    (also inside typer.Option(...)), an assignment, a keyword argument, `d.get("name", v)`,
    `d.get("name") or v`, `typer.Option(v, "--name")` and a dict entry `{"name": v}`."""

    def lit(node: ast.AST | None) -> float | None:
        if isinstance(node, ast.Call) and node.args:  # typer.Option(2, ...)
            node = node.args[0]
        ok = isinstance(node, ast.Constant) and type(node.value) in (int, float)
        return node.value if ok else None  # type: ignore[union-attr]

    def get_key(node: ast.AST) -> str | None:
        ok = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        ok = ok and node.func.attr == "get" and bool(node.args)  # type: ignore[union-attr]
        key = node.args[0] if ok else None  # type: ignore[union-attr]
        return key.value if isinstance(key, ast.Constant) else None

    for node in ast.walk(tree):
        pairs: list[tuple[str, ast.AST]] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            pos = a.posonlyargs + a.args
            pairs += zip(
                [x.arg for x in pos[len(pos) - len(a.defaults) :]], a.defaults, strict=True
            )
            pairs += zip([x.arg for x in a.kwonlyargs], a.kw_defaults, strict=True)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            pairs.append((node.target.id, node.value))
        elif isinstance(node, ast.Assign):
            pairs += [(t.id, node.value) for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.Call):
            pairs += [(kw.arg, kw.value) for kw in node.keywords if kw.arg]
            if get_key(node) and len(node.args) == 2:
                pairs.append((get_key(node), node.args[1]))  # type: ignore[arg-type]
            flag = node.args[1] if len(node.args) >= 2 else None
            if isinstance(flag, ast.Constant) and str(flag.value).startswith("--"):
                pairs.append((flag.value[2:].replace("-", "_"), node.args[0]))
        elif isinstance(node, ast.BoolOp) and get_key(node.values[0]):
            pairs.append((get_key(node.values[0]), node.values[-1]))  # type: ignore[arg-type]
        elif isinstance(node, ast.Dict):
            keys = [k.value if isinstance(k, ast.Constant) else None for k in node.keys]
            pairs += [(k, v) for k, v in zip(keys, node.values, strict=True) if isinstance(k, str)]
        for name, value in pairs:
            if lit(value) is not None:
                yield ALIASES.get(name, name), lit(value), value.lineno  # type: ignore[misc]


def second_definitions(src: Path) -> list[str]:
    """Each tracked literal outside its allowed files, and any after the first within one."""
    found = []
    for path in sorted(src.rglob("*.py")):
        where = path.relative_to(src).as_posix()
        seen: set[tuple[str, float]] = set()
        for name, value, line in sorted(
            named_int_literals(ast.parse(path.read_text())), key=lambda t: t[2]
        ):
            allowed = ONE_PLACE.get((name, value))
            if allowed is not None and (where not in allowed or (name, value) in seen):
                found.append(f"{where}:{line}: {name} = {value}")
            seen.add((name, value))
    return found


def test_each_shared_default_is_defined_once() -> None:
    assert second_definitions(SRC) == []


def test_a_second_definition_is_found(tmp_path: Path) -> None:
    """The scan itself can fail: each way of writing the literal again is caught."""
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "pipeline" / "x.py").write_text(
        "import typer\n"
        "def f(workers: int = 2, *, k=20): ...\n"
        "W = typer.Option(2, '--workers')\n"
        "g(batch_size=4096)\n"
        "s.get('k', 20)\n"
        "r.get('batch_size') or 4096\n"
        "FACTOR = 3\n"
        "eval_interval: int = 25\n"
        "P = {'train_eval_interval': 50, 'patience_fraction': 0.25}\n"
        "Schedule(stop=StopRule(patience=4))\n"
    )
    found = second_definitions(tmp_path)
    lines = [f.split(":")[1] for f in found]
    assert lines == ["2", "2", "3", "4", "5", "6", "7", "8", "9", "9", "10"]
    (tmp_path / "runs").mkdir()  # the allowed file, holding the value twice
    (tmp_path / "runs" / "sweep.py").write_text("WORKERS = 2\nclass Pool:\n    workers: int = 2\n")
    assert second_definitions(tmp_path)[-1] == "runs/sweep.py:3: workers = 2"
