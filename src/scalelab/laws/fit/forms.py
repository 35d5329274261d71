"""The one-variable law's forms, one registry: what `fit_power_law(form=...)` and
`scalelab fit --form` take. Read without numpy or scipy (the CLI's `--help` lists it), each
entry names the function that fits it as "module:function", imported on first use."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Form:
    """A form: its one-line description (`scalelab fit --help`), the fewest points it fits,
    and its fitting function `fit(x, y, n_boot, rng, seed) -> PowerLawFit` (x, y positive
    float64 arrays already checked; `rng` a numpy Generator seeded with `seed`)."""

    help: str
    min_points: int
    fit: str

    def function(self) -> Callable[..., Any]:
        module, name = self.fit.split(":")
        return getattr(importlib.import_module(module), name)


FORMS: dict[str, Form] = {
    "power": Form(
        "log-log least squares (the paper's fit)", 3, "scalelab.laws.fit.power_law:fit_log_log"
    ),
    "power+E": Form("y = E + A·x^-α", 4, "scalelab.laws.fit.power_law:fit_with_floor"),
}
