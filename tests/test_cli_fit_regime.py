"""`scalelab fit`'s regime analysis: the same numbers as the library, one analysis per group,
the limited runs ending the range, a facts store's exact floor and ideal exponent, the
figures, and bad input as one line and exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scalelab.io import to_json
from scalelab.laws.fit.power_law import fit_power_law
from scalelab.laws.regime.analysis import IDEAL, analyse_regime
from scalelab.report.regime import loss_figure, slopes_figure
from scalelab.text.corpora import load_corpus
from scalelab.text.floors import facts_store_theory, store_unigram_entropy
from scalelab.text.store import prepare_corpus

SIZES = np.geomspace(500, 107_722, 8)


@pytest.fixture
def fit_cli(run_cli):
    """`scalelab fit ARGS` through conftest's `run_cli`: (code, out, err)."""

    def call(*args: object) -> tuple[int, str, str]:
        result = run_cli("fit", *map(str, args))
        return result.returncode, result.stdout, result.stderr

    return call


def table(tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    rng = np.random.default_rng(0)
    rows = []
    for corpus, alpha in (("straight", 0.3), ("bent", None)):
        if alpha is None:  # local slopes 0.03 -> 0.11
            steps = np.linspace(0.03, 0.11, 7) * np.diff(np.log(SIZES))
            loss = 7.0 * np.exp(-np.concatenate([[0.0], np.cumsum(steps)]))
        else:
            loss = 40.0 * SIZES**-alpha * np.exp(0.01 * rng.standard_normal(SIZES.size))
        for i, (n, v) in enumerate(zip(SIZES, loss, strict=True)):
            rows.append({"corpus": corpus, "run": f"{corpus}-{i}", "n": n, "loss": v})
    df = pd.DataFrame(rows)
    df["limited"] = df["run"] == "straight-6"
    path = tmp_path / "runs.csv"
    df.to_csv(path, index=False)
    return path, df


ARGS = ["--x", "n", "--y", "loss", "--n-boot", "200", "--json"]


def test_json_regime_is_the_librarys(tmp_path: Path, fit_cli) -> None:
    _, df = table(tmp_path)
    part = df[df.corpus == "straight"]
    part.to_csv(tmp_path / "one.csv", index=False)
    code, out, err = fit_cli(tmp_path / "one.csv", *ARGS, "--unigram-entropy", "8.0")
    assert code == 0, err
    got = json.loads(out)["regime"]
    lib = analyse_regime(part.n, part.loss, unigram_entropy=8.0, n_boot=200, seed=0)
    assert got == json.loads(to_json(lib.to_dict()))
    assert got["power_law"] and got["verdict"].startswith("POWER LAW: test loss over")


def test_groups_and_limited_runs(tmp_path: Path, fit_cli) -> None:
    path, _ = table(tmp_path)
    code, out, err = fit_cli(path, *ARGS, "--group", "corpus", "--limited", "straight-6")
    assert code == 0, err
    groups = json.loads(out)["groups"]
    straight, bent = groups["straight"]["regime"], groups["bent"]["regime"]
    assert straight["fit_range"]["x_hi"] == pytest.approx(SIZES[5])  # below the limited run
    assert (
        not bent["power_law"]
        and bent["outcome"] == "CURVED"
        and bent["verdict"].startswith("CURVED")
    )
    code, out2, _ = fit_cli(path, *ARGS, "--group", "corpus", "--limited-col", "limited")
    assert code == 0 and json.loads(out2)["groups"]["straight"]["regime"] == straight


def test_facts_store_gives_the_exact_floor_and_the_ideal_exponent(tmp_path: Path, fit_cli) -> None:
    spec = "synth:facts:a=1.0,words=4,key_len=2,value_len=2,facts_per_doc=4,tokens=6000"
    store = prepare_corpus(load_corpus(spec), tmp_path / "store", vocab_size=262, quiet=True)
    th = facts_store_theory(store)
    n = np.geomspace(200, 40_000, 7)
    pd.DataFrame({"n": n, "loss": th.loss_per_token(n)}).to_csv(tmp_path / "t.csv", index=False)
    code, out, err = fit_cli(tmp_path / "t.csv", *ARGS, "--store", store, "--block-size", 16)
    assert code == 0, err
    regime = json.loads(out)["regime"]
    assert regime["fit_range"]["unigram_entropy"] == pytest.approx(store_unigram_entropy(store, 16))
    excess = regime["excess"]
    assert excess["E"] == pytest.approx(th.irreducible_nats_per_token)
    lo, hi = regime["fit_range"]["x_lo"], regime["fit_range"]["x_hi"]
    assert regime["predictions"][IDEAL] == pytest.approx(th.effective_exponent(lo, hi))
    keep = (n >= lo) & (n <= hi)
    truth = fit_power_law(n[keep], th.loss_per_token(n)[keep] - th.irreducible_nats_per_token)
    assert excess["exponent"] == pytest.approx(truth.exponent, rel=1e-9)


def test_figures_are_written_and_draw_from_saved_json(tmp_path: Path, fit_cli) -> None:
    path, _ = table(tmp_path)
    code, out, err = fit_cli(path, *ARGS, "--group", "corpus", "--figures", tmp_path / "fig")
    assert code == 0, err
    for name in ("straight-loss", "straight-slopes", "bent-loss", "bent-slopes"):
        assert (tmp_path / "fig" / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    regime = json.loads(out)["groups"]["bent"]["regime"]
    regime["predictions"] = {"theory": 0.1}
    assert len(slopes_figure(regime, title="t").axes[0].get_lines()) >= 2
    assert loss_figure(regime, title="t").axes[0].get_legend() is not None


def test_plain_output_names_the_verdict_and_the_range(tmp_path: Path, fit_cli) -> None:
    path, _ = table(tmp_path)
    code, out, err = fit_cli(
        path, "--x", "n", "--y", "loss", "--n-boot", "100", "--group", "corpus"
    )
    assert code == 0, err
    assert "local slopes" in out and "CURVED" in out and "fitted range" in out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--group", "corpus", "--store", "nowhere"], "--store describes one corpus"),
        (["--limited", "nobody"], "no run named ['nobody']"),
        (["--limited-col", "nothing"], "no column 'nothing'"),
        (["--unigram-col", "n"], "holds 8 different values"),
        (["--tolerance", "0"], "tolerance must be in (0, 10)"),
        (["--group", "missing"], "no column 'missing' to group by"),
    ],
)
def test_bad_regime_input_is_one_line_exit_2(tmp_path: Path, fit_cli, extra, message) -> None:
    path, df = table(tmp_path)
    df[df.corpus == "bent"].to_csv(tmp_path / "bent.csv", index=False)
    target = path if "--group" in extra else tmp_path / "bent.csv"
    code, _, err = fit_cli(target, "--x", "n", "--y", "loss", "--n-boot", "0", *extra)
    assert code == 2, err
    assert message in err and err.count("\n") == 1


def test_figures_without_groups_are_named_by_the_table(tmp_path: Path, fit_cli) -> None:
    _, df = table(tmp_path)
    df[df.corpus == "bent"].to_csv(tmp_path / "bent-runs.csv", index=False)
    code, _, err = fit_cli(tmp_path / "bent-runs.csv", *ARGS, "--figures", tmp_path / "f")
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "f").iterdir()) == [
        "bent-runs-loss.png",
        "bent-runs-slopes.png",
    ]
