"""`scalelab id` and `scalelab exponents`: every file format, the JSON fields,
the paper's Table 1 conversions, and each bad input as one line on stderr with exit code 2
and nothing written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import save_file

from scalelab.cli import main
from scalelab.intrinsic.synthetic import curved_manifold


def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, *args: str):
    """Run the real entry point in-process: (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["scalelab", *map(str, args)])
    code = 0
    try:
        main()
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def points() -> np.ndarray:
    return curved_manifold(1200, 5, 24, seed=3)


def write_all_formats(x: np.ndarray, folder: Path) -> list[Path]:
    paths = [folder / f"p.{ext}" for ext in ("npy", "npz", "pt", "safetensors", "csv", "parquet")]
    np.save(paths[0], x)
    np.savez(paths[1], emb=x)
    torch.save(torch.from_numpy(x), paths[2])
    save_file({"emb": torch.from_numpy(x)}, str(paths[3]))
    pd.DataFrame(x, columns=[f"f{i}" for i in range(x.shape[1])]).to_csv(paths[4], index=False)
    pd.DataFrame(x, columns=[f"f{i}" for i in range(x.shape[1])]).to_parquet(paths[5])
    return paths


def test_every_format_gives_the_same_dimension(monkeypatch, capsys, points, tmp_path) -> None:
    values = []
    for path in write_all_formats(points, tmp_path):
        code, out, err = run(
            monkeypatch, capsys, "id", path, "--k", "10", "--batch-size", "600", "--json", "-q"
        )
        assert code == 0, err
        row = json.loads(out)
        values.append(row["dimension"])
    assert row["n_points"] == 1200 and row["n_batches"] == 2 and row["k"] == 10
    for field in ("dimension_se", "batch_dimensions", "n_duplicates_removed", "metric"):
        assert field in row
    assert row["alpha_D"] == pytest.approx(2 / (2 + row["dimension"]))
    assert row["alpha_N"] == pytest.approx(2 / row["dimension"])
    # .npy/.npz/.pt/.safetensors hold float32; CSV/Parquet round-trip through float64 text
    assert max(values) - min(values) < 1e-5 * values[0]
    assert values[0] == pytest.approx(5.0, rel=0.15)


def test_out_file_has_result_and_provenance(monkeypatch, capsys, points, tmp_path) -> None:
    np.save(tmp_path / "p.npy", points)
    out_file = tmp_path / "res" / "id.json"
    code, out, _ = run(
        monkeypatch, capsys, "id", tmp_path / "p.npy", "--estimator", "twonn",
        "--beta", "2", "--out", out_file, "-q", "--batch-size", "600",
    )  # fmt: skip
    saved = json.loads(out_file.read_text())
    assert code == 0 and "alpha_D" in out
    assert saved["estimator"] == "twonn" and saved["beta"] == 2.0
    assert saved["alpha_N"] == pytest.approx(4 / saved["dimension"])
    assert "git_revision" in saved["provenance"]


def test_id_on_10240_points_uses_two_batches_of_4096(monkeypatch, capsys, tmp_path) -> None:
    np.save(tmp_path / "p.npy", curved_manifold(10_240, 4, 16, seed=5))
    code, out, err = run(monkeypatch, capsys, "id", tmp_path / "p.npy", "--json", "-q")
    assert code == 0, err
    row = json.loads(out)
    assert row["batch_size"] == 4096 and row["n_batches"] == 2
    assert row["n_points_used"] == 8192 and row["n_points_left_out"] == 2048
    code, out, _ = run(monkeypatch, capsys, "id", tmp_path / "p.npy", "-q")
    assert code == 0 and "2 batches of 4,096; 2,048 left out" in out
    code, _, err = run(monkeypatch, capsys, "id", tmp_path / "p.npy", "--batch-size", "20000")
    assert code == 2 and "10,240 points are fewer than one batch of 20,000" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--alpha-n", "0.076"], {"alpha_D": 0.0706}),  # GPT-2 (Kaplan et al.)
        (["--alpha-d", "0.095"], {"alpha_N": 0.1050}),
        (["--alpha-n", "0.34"], {"alpha_D": 0.2537}),  # Chinchilla
        (["--alpha-d", "0.28"], {"alpha_N": 0.3889}),  # the seed paper prints 0.33 here
        (["--d", "8"], {"alpha_D": 0.2, "alpha_N": 0.25}),
    ],
)
def test_exponents_table1(monkeypatch, capsys, args, expected) -> None:
    code, out, err = run(monkeypatch, capsys, "exponents", *args, "--json")
    assert code == 0, err
    row = json.loads(out)
    for name, value in expected.items():
        assert round(row[name], 4) == value


def bad_files(folder: Path) -> dict[str, tuple[Path, list[str], str]]:
    """name -> (file, extra args, expected message fragment)."""
    rng = np.random.default_rng(0)
    good = rng.standard_normal((100, 6))
    cases: dict[str, tuple[Path, list[str], str]] = {}

    def npy(name: str, arr: np.ndarray, args: list[str], msg: str) -> None:
        np.save(folder / f"{name}.npy", arr)
        cases[name] = (folder / f"{name}.npy", args, msg)

    cases["missing"] = (folder / "nope.npy", [], "no such file")
    (folder / "garbage.npy").write_bytes(b"this is not numpy")
    cases["unreadable"] = (folder / "garbage.npy", [], "cannot read")
    (folder / "points.txt").write_text("1 2 3\n")
    cases["unknown format"] = (folder / "points.txt", [], "unknown format")
    npy("one_d", np.arange(50.0), [], "2-D")
    npy("empty", np.zeros((0, 4)), [], "empty")
    nan = good.copy()
    nan[3, 2] = np.nan
    nan[7, 0] = np.inf
    npy("nan", nan, [], "2 rows contain NaN or inf")
    npy("few", good[:15], ["--k", "20"], "15 points")
    npy("identical", np.ones((100, 6)), [], "identical")
    npy("k_small", good, ["--k", "1"], "k >= 2")
    npy("batch_small", good, ["--k", "10", "--batch-size", "10"], "batch size")
    (folder / "words.csv").write_text("a,b\n1,2\n3,x\n5,6\n")
    cases["non-numeric csv"] = (folder / "words.csv", [], "non-numeric value 'x'")
    return cases


def test_bad_inputs_one_line_exit_2_nothing_written(monkeypatch, capsys, tmp_path) -> None:
    for name, (path, extra, message) in bad_files(tmp_path).items():
        out_file = tmp_path / f"{name}.json"
        code, out, err = run(monkeypatch, capsys, "id", path, *extra, "--out", out_file, "-q")
        assert code == 2, name
        assert err.count("\n") == 1 and err.startswith("error: "), (name, err)
        assert message in err, (name, err)
        assert not out_file.exists() and out == "", name


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["exponents"], "exactly one"),
        (["exponents", "--d", "3", "--alpha-n", "0.5"], "exactly one"),
        (["exponents", "--d", "-1"], "d (intrinsic dimension) must be > 0"),
        (["exponents", "--alpha-d", "1.5"], "alpha_D must lie in (0, 1)"),
        (["exponents", "--alpha-n", "0.5", "--d-se", "1"], "--d-se"),
    ],
)
def test_exponents_bad_input(monkeypatch, capsys, args, message) -> None:
    code, _, err = run(monkeypatch, capsys, *args)
    assert code == 2 and message in err and err.count("\n") == 1


def test_real_entry_point_subprocess(tmp_path) -> None:
    """The installed console script itself: exit code 2 and one line, no traceback."""
    exe = Path(sys.executable).with_name("scalelab")
    proc = subprocess.run(
        [str(exe), "id", str(tmp_path / "missing.npy")], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: no such file: {tmp_path}/missing.npy; check the path"
    ]


def test_id_settings_are_one_config_for_python_the_cli_and_a_file(
    monkeypatch, capsys, points, tmp_path
) -> None:
    """`IdConfig` defines `scalelab id`'s options: the estimator it makes is the one the
    options name, and `--config` gives the same d as the options it holds."""
    from scalelab.intrinsic.config import IdConfig
    from scalelab.intrinsic.protocol import make_estimator
    from scalelab.probe.dimension import dimension_and_exponents

    cfg = IdConfig(k=10, batch_size=600, metric="cosine")
    assert vars(cfg.make()) == vars(make_estimator("mle", k=10, metric="cosine"))
    np.save(tmp_path / "p.npy", points)
    code, out, _ = run(
        monkeypatch, capsys, "id", tmp_path / "p.npy", "--k", "10", "--batch-size", "600",
        "--metric", "cosine", "--json",
    )  # fmt: skip
    by_options = json.loads(out)
    (tmp_path / "id.toml").write_text('k = 10\nbatch_size = 600\nmetric = "cosine"\n')
    code2, out2, _ = run(monkeypatch, capsys, "id", tmp_path / "p.npy", "--config",
                         tmp_path / "id.toml", "--json")  # fmt: skip
    assert code == code2 == 0 and json.loads(out2) == by_options
    python = dimension_and_exponents(points, cfg.make(), batch_size=600, seed=0, quiet=True)
    assert python.to_dict()["dimension"] == by_options["dimension"]
    code, _, err = run(monkeypatch, capsys, "id", tmp_path / "p.npy", "--beta", "-1")
    assert code == 2 and "--beta -1" in err and len(err.strip().splitlines()) == 1
