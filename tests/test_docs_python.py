"""docs/python.md's example runs as written, in an empty folder (its own asserts check the
numbers: d of a known 6-manifold, a fitted exponent of a known law, the points' shape, the
validation's sweep sizes, and that the pipeline's steps run one by one give
`run_pipeline`'s numbers)."""

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "python.md"


def test_python_md_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert blocks, "docs/python.md lost its example"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    exec(compile("\n".join(blocks), str(DOC), "exec"), namespace)  # our own docs, not input
    assert namespace["points"].shape == (1600, 32)
    assert (tmp_path / "run" / "result.json").is_file()
    assert (tmp_path / "validate" / "summary.json").is_file()
    # part 5: the steps one by one made their own folder, with the same runs
    assert (tmp_path / "steps" / "pipeline.json").is_file()
    assert len(namespace["data"].specs) == 3


def test_exports_resolve_and_return_no_bare_dicts() -> None:
    """Every name in `scalelab._EXPORTS` resolves, and no exported function is annotated to
    return a dict: results are records with attributes (`config.Record`)."""
    import inspect

    import scalelab

    for name in scalelab._EXPORTS:
        obj = getattr(scalelab, name)
        if inspect.isfunction(obj):
            returns = str(inspect.signature(obj).return_annotation)
            assert not returns.startswith("dict"), f"{name} returns {returns}"
