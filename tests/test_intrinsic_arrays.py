"""Point-cloud readers: each format returns the array it was given, containers with several
arrays need a key, and malformed files raise InputError naming the problem."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import save_file

from scalelab.errors import InputError
from scalelab.intrinsic.arrays import load_points

X = np.arange(24, dtype=np.float32).reshape(6, 4) / 7


def test_binary_formats_round_trip_bit_exactly(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", X)
    np.savez(tmp_path / "a.npz", X)
    torch.save(torch.from_numpy(X), tmp_path / "a.pt")
    save_file({"x": torch.from_numpy(X)}, str(tmp_path / "a.safetensors"))
    for name in ("a.npy", "a.npz", "a.pt", "a.safetensors"):
        got = load_points(tmp_path / name)
        assert got.dtype == np.float32, name
        np.testing.assert_array_equal(got, X)


def test_half_precision_tensors_become_float32(tmp_path: Path) -> None:
    torch.save(torch.from_numpy(X).bfloat16(), tmp_path / "h.pt")
    got = load_points(tmp_path / "h.pt")
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, torch.from_numpy(X).bfloat16().float().numpy())


def test_containers_with_several_arrays_need_a_key(tmp_path: Path) -> None:
    np.savez(tmp_path / "m.npz", emb=X, labels=np.arange(6))
    torch.save({"emb": torch.from_numpy(X), "other": torch.zeros(2, 2)}, tmp_path / "m.pt")
    for name in ("m.npz", "m.pt"):
        with pytest.raises(InputError, match="choose one with --key"):
            load_points(tmp_path / name)
        np.testing.assert_array_equal(load_points(tmp_path / name, key="emb"), X)
        with pytest.raises(InputError, match="no array 'nope'"):
            load_points(tmp_path / name, key="nope")


def test_csv_with_and_without_header(tmp_path: Path) -> None:
    pd.DataFrame(X).to_csv(tmp_path / "h.csv", index=False)  # header "0,1,2,3"
    (tmp_path / "n.csv").write_text("\n".join(",".join(map(repr, r.tolist())) for r in X))
    pd.DataFrame(X, columns=list("abcd")).to_csv(tmp_path / "w.csv", index=False)
    np.testing.assert_allclose(load_points(tmp_path / "n.csv"), X, rtol=1e-7)
    np.testing.assert_allclose(load_points(tmp_path / "w.csv"), X, rtol=1e-7)
    # A numeric header cannot be told from data: it is read as a row.
    assert load_points(tmp_path / "h.csv").shape == (7, 4)


def test_parquet_columns_or_one_list_column(tmp_path: Path) -> None:
    pd.DataFrame(X, columns=list("abcd")).to_parquet(tmp_path / "c.parquet")
    pd.DataFrame({"embedding": list(X.astype(np.float64))}).to_parquet(tmp_path / "l.parquet")
    np.testing.assert_array_equal(load_points(tmp_path / "c.parquet"), X)
    np.testing.assert_allclose(load_points(tmp_path / "l.parquet"), X, rtol=1e-7)
    pd.DataFrame({"a": [1.0, 2.0], "name": ["x", "y"]}).to_parquet(tmp_path / "s.parquet")
    with pytest.raises(InputError, match="non-numeric columns"):
        load_points(tmp_path / "s.parquet")


@pytest.mark.parametrize(
    ("write", "message"),
    [
        (lambda p: np.save(p / "f.npy", np.zeros((2, 3, 4))), "2-D"),
        (lambda p: np.save(p / "f.npy", np.array([["a", "b"]])), "not numbers"),
        (lambda p: np.save(p / "f.npy", np.array([{}, 1], dtype=object)), "cannot read"),
        (lambda p: (p / "f.npz").write_bytes(b"junk"), "cannot read"),
        (lambda p: (p / "f.pt").write_bytes(b"junk"), "cannot read"),
        (lambda p: (p / "f.safetensors").write_bytes(b"junk"), "cannot read"),
        (lambda p: (p / "f.parquet").write_bytes(b"junk"), "cannot read"),
        (lambda p: (p / "f.csv").write_text(""), "empty"),
        (lambda p: torch.save({"a": 1}, p / "f.pt"), "not a tensor"),
    ],
)
def test_malformed_files(tmp_path: Path, write, message: str) -> None:
    write(tmp_path)
    (path,) = [p for p in tmp_path.iterdir() if p.name.startswith("f.")]
    with pytest.raises(InputError, match=message):
        load_points(path)


def test_missing_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_points(tmp_path / "absent.npy")
    with pytest.raises(InputError, match="directory"):
        load_points(tmp_path)
