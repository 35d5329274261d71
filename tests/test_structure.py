"""The package's import structure holds the line (bench/imports.py measures it): no import
cycles, no folder loops, no import against the declared layer order, no forbidden import. Size
is reported, never checked: a file holds one concept whatever its length. The check itself is
tested on a tiny package with a cycle."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports_module():
    spec = importlib.util.spec_from_file_location("bench_imports", ROOT / "bench" / "imports.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_imports"] = module
    spec.loader.exec_module(module)
    return module


def test_scalelab_keeps_its_layers() -> None:
    m = _imports_module().measure(ROOT / "src")
    assert m["module_cycles"] == []
    assert m["folder_loops"] == []
    assert m["back_edges"] == []
    assert m["forbidden_imports"] == []  # report/ imports no fit and no sweep analysis


def test_size_is_a_report_not_a_limit(tmp_path: Path) -> None:
    """A module of 600 lines with a function of 100 breaks nothing; both are listed."""
    pkg = tmp_path / "scalelab"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    body = "".join(f"    x{i} = {i}\n" for i in range(99))
    (pkg / "errors.py").write_text("def long():\n" + body + "\n" * 500)
    m = _imports_module().measure(tmp_path)
    assert m["largest_modules"]["scalelab.errors"] == 600
    assert m["longest_functions"] == {"scalelab.errors.long": 100}
    assert not _imports_module().broken(m)


def test_the_measure_sees_a_cycle_and_a_back_edge(tmp_path: Path) -> None:
    pkg = tmp_path / "scalelab"
    (pkg / "lm").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "lm" / "__init__.py").write_text("")
    (pkg / "errors.py").write_text("from scalelab.lm import a\n")  # ground floor imports up
    (pkg / "lm" / "a.py").write_text("from scalelab.lm import b\n")
    (pkg / "lm" / "b.py").write_text("def f():\n    from scalelab.lm import a\n")
    m = _imports_module().measure(tmp_path)
    assert m["module_cycles"] == [["scalelab.lm.a", "scalelab.lm.b"]]
    assert m["back_edges"] == ["scalelab.errors -> scalelab.lm.a"]
    assert m["imports_inside_functions"] == 1


def test_the_measure_sees_report_importing_a_fit(tmp_path: Path) -> None:
    """report/ only draws: an import of a fit (`laws.fit.power_law`, `laws.fit.chinchilla`)
    there, even inside a function, or of `manifold.analysis`, `manifold.results` or
    `sweeps.analysis` (whose `analyse_sweep` computes), is named; the fitted law's record
    (`laws.fit.fitted`) and a type imported for annotations only are not."""
    pkg = tmp_path / "scalelab"
    for room in ("laws", "laws/fit", "manifold", "report", "sweeps"):
        (pkg / room).mkdir(parents=True)
        (pkg / room / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "laws" / "fit" / "power_law.py").write_text("")
    (pkg / "laws" / "fit" / "chinchilla.py").write_text("")
    (pkg / "laws" / "fit" / "fitted.py").write_text("")
    (pkg / "manifold" / "analysis.py").write_text("")
    (pkg / "manifold" / "results.py").write_text("")
    (pkg / "sweeps" / "analysis.py").write_text("")
    (pkg / "report" / "a.py").write_text(
        "def f():\n    from scalelab.laws.fit.power_law import g\n"
    )
    (pkg / "report" / "b.py").write_text("from scalelab.manifold import analysis\n")
    (pkg / "report" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nfrom scalelab.laws.fit.fitted import F\n"
        "if TYPE_CHECKING:\n    from scalelab.laws.fit.chinchilla import G\n"
        "    from scalelab.sweeps.analysis import SweepAnalysis\n"
    )
    (pkg / "report" / "d.py").write_text("from scalelab.sweeps.analysis import analyse_sweep\n")
    (pkg / "report" / "e.py").write_text("from scalelab.manifold.results import ManifoldAnalysis\n")
    m = _imports_module().measure(tmp_path)
    assert m["forbidden_imports"] == [
        "scalelab.report.a -> scalelab.laws.fit.power_law",
        "scalelab.report.b -> scalelab.manifold.analysis",
        "scalelab.report.d -> scalelab.sweeps.analysis",
        "scalelab.report.e -> scalelab.manifold.results",
    ]
    assert _imports_module().broken(m)
