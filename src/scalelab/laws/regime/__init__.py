"""Where a loss-vs-size curve is a power law: the rules (local slopes, the curvature test and
its three outcomes, the fit range; `rules`), the test's power and the plan that would decide
(`power`), the exponent of the excess loss L − E (`excess`), and all of it in one call
(`analysis`, what `scalelab fit` and validate report)."""
