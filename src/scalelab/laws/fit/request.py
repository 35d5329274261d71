"""What `scalelab fit` is asked (`FitRequest`): the table's columns, the form, the intervals,
and what the regime analysis reads besides sizes and losses. Each field is the command's
option; numpy-, pandas- and scipy-free, so `scalelab fit --help` stays light."""

from __future__ import annotations

import dataclasses

from scalelab.config import FLAT, Config, option
from scalelab.errors import ConfigError
from scalelab.laws.fit.forms import FORMS
from scalelab.laws.regime.rules import RegimeConfig

#: The forms `scalelab fit --form` takes: the one-variable ones and the joint law.
FORM_HELP = "; ".join(f"{name}: {f.help}" for name, f in FORMS.items())
FORM_HELP += "; chinchilla: L = E + A/N^α + B/D^β."


@dataclasses.dataclass(frozen=True)
class FitRequest(Config):
    """A fit of column `y` of a table: on `x` (a one-variable form) or on `n_col` and
    `d_col`/`c_col` (chinchilla), per value of `group` where given. The regime inputs: the
    unigram entropy (a number, a column, or a token `store`'s test split), the floor E (a
    number or a column), which runs were limited, and the rules' constants (`rules`)."""

    y: str = option("", "Loss column (positive); required.")
    x: str | None = option(None, f"Size column ({', '.join(FORMS)}).")
    form: str = option("power", FORM_HELP)
    n_col: str | None = option(None, "Parameters column (chinchilla).")
    d_col: str | None = option(None, "Tokens column (chinchilla).")
    c_col: str | None = option(None, "Training-FLOP column instead of --d-col: D = C / (6 N).")
    holdout: int = option(0, "Also fit without the K largest sizes and report their error.")
    compute: tuple[float, ...] = option(
        (), "chinchilla: comma-separated FLOP budgets C; prints N_opt, D_opt for C = 6ND."
    )
    n_boot: int = option(1000, "Bootstrap resamples for the intervals (0: none).")
    seed: int = option(0, "Random seed (recorded with the results).")
    group: str | None = option(None, "Fit each value of this column apart (e.g. corpus).")
    unigram_entropy: float | None = option(
        None,
        "Unigram entropy of the test tokens (nats/token): the fit range starts at the first "
        "size whose loss is --unigram-margin below it.",
    )
    unigram_col: str | None = option(
        None, "Column holding the unigram entropy (one value per group)."
    )
    store: str | None = option(
        None,
        "Token store the runs trained on: its test split's unigram entropy and, for a "
        "synth:facts store, the exact floor E and the ideal learner's exponent.",
    )
    block_size: int | None = option(
        None,
        "With --store: the runs' context length (scored test windows).",
        retired="--context-len",
    )
    test_tokens: int | None = option(None, "With --store: the runs' cap on scored test tokens.")
    floor: float | None = option(None, "Known irreducible loss E (default: the power+E fit's).")
    floor_col: str | None = option(None, "Column holding E (one value per group).")
    limited_col: str | None = option(None, "Column true for budget- or model-limited runs.")
    limited: tuple[str, ...] = option((), "Comma-separated names (in --run-col) of limited runs.")
    run_col: str = option("run", "Column of run names for --limited.")
    rules: RegimeConfig = dataclasses.field(default_factory=RegimeConfig, metadata=FLAT)

    def validate(self) -> None:
        if not isinstance(self.n_boot, int) or self.n_boot < 0:
            raise ConfigError(
                f"n_boot must be >= 0, got {self.n_boot!r}; give 0 (no intervals) or more"
            )
