"""The h·m·p-vs-n table: the one-layer bound's numbers by hand, the gather construction's
size from its layout and checked exact, the two-layer construction's width constant."""

import math

import pytest

from scalelab.errors import ConfigError
from scalelab.induction.protocol import index_bits, least_one_layer_hmp
from scalelab.induction.size import SizeConfig, alphabet_for, size_table


def test_bound_by_hand() -> None:
    # n = 65: k = 32 bits for |Σ| = 3; 32·log2(7) for |Σ| = 8; message 4·h·m·p must carry it
    assert index_bits(65) == 32 and least_one_layer_hmp(65) == 8
    assert least_one_layer_hmp(65, 8) == pytest.approx(32 * math.log2(7) / 4)


def test_size_rows_at_small_n() -> None:
    rows = size_table(SizeConfig(ns=(16, 64), n_random=8, n_hard=8))
    assert {(r["n"], r["alphabet_size"]) for r in rows} == {
        (16, 3),
        (16, 4),
        (16, 16),
        (64, 3),
        (64, 8),
        (64, 64),
    }
    two = [r for r in rows if r["kind"] == "two-layer"]
    assert {r["m"] for r in two} == {12} and all(r["hmp"] == 12 * r["p"] for r in two)
    gather = [r for r in rows if r["kind"] == "gather"]
    assert all(r["wrong_hard"] == 0 for r in gather)
    # the gather construction's h·m·p is n·⌈log2|Σ|⌉ up to the packing overhead
    for r in gather:
        digits = max(1, math.ceil(math.log2(r["alphabet_size"])))
        assert r["n"] * digits <= r["hmp"] <= 2 * r["n"] * digits
    bound = {(r["n"], r["alphabet_size"]): r["hmp"] for r in rows if r["kind"] == "bound"}
    assert bound[(64, 3)] == 31 / 4


def test_alphabet_rules() -> None:
    assert [alphabet_for(r, 16384) for r in ("3", "sqrt", "n")] == [3, 128, 16384]
    with pytest.raises(ConfigError, match="unknown alphabet rule"):
        alphabet_for("log", 16)
