"""The sweep report's bound marker, counted by hand: the one-layer protocol's message is
4·h·d_head·p bits (`protocol.message_bits`, the count of the separation figure), and the
bound forces errors from the first n = 2k + 1 whose k exceeds it."""

import pandas as pd

from scalelab.induction.protocol import errors_forced_from, message_bits
from scalelab.report.induction import METRICS, _figure, bound_markers, with_bound


def _rows() -> pd.DataFrame:
    common = {"model": "trained", "alphabet_size": 3, "acc_all": 0.5, "acc_last": 0.5}
    return pd.DataFrame(
        [
            # §3b of docs/benchmarks/induction.md: h = 1, m = 8, trained at p = 2
            {
                **common,
                "n": n,
                "n_layer": 1,
                "n_head": 1,
                "n_embd": 8,
                "acc_hard": 0.5,
                "train_bits_effective": 2,
            }
            for n in (65, 129, 257)
        ]
        + [
            # §1: h = 2 heads of 32 (n_embd 64), float32 (p = 24); h·n_embd·p = 3072
            {
                **common,
                "n": 128,
                "n_layer": 1,
                "n_head": 2,
                "n_embd": 64,
                "acc_hard": 0.5,
                "train_bits_effective": None,
            }
        ]
    )


def test_the_marker_is_where_the_message_falls_short_of_k() -> None:
    table = with_bound(_rows())
    # by hand: 4 · 1 · 8 · 2 = 64 bits; k = 64 is still covered, k = 65 is not: n = 131
    assert message_bits(1, 8, 2) == 64 and errors_forced_from(1, 8, 2) == 131
    # by hand: 4 · 2 · 32 · 24 = 6144 bits (not 4 · 2 · 64 · 24): n = 2 · 6145 + 1
    assert message_bits(2, 32, 24) == 6144 and errors_forced_from(2, 32, 24) == 12291
    assert list(table["hmp"]) == [16, 16, 16, 2 * 32 * 24]
    assert bound_markers(table) == [131, 12291]


def test_the_figure_draws_the_marker_at_n_131() -> None:
    fig = _figure(with_bound(_rows()).iloc[:3], METRICS[-1:])
    ax = fig.axes[0]
    verticals = [
        line.get_xdata()[0]
        for line in ax.get_lines()
        if line.get_color() == "red" and len(set(line.get_xdata())) == 1
    ]
    assert verticals == [131]
