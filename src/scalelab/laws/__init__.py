"""Scaling laws, by topic, bottom first: `fit` (the power law, the joint law), `regime` (where
a loss curve is a power law: the rules, the test's power, the excess exponent, the analysis),
`forecast` (larger runs from smaller ones, scored on held-out runs) and `compare` (predicted
exponents against baselines, with a paired bootstrap over corpora). At the top: `theory` (the
exponents from d), `language_statistics` (the second theory), `table` (a results table's
numeric columns) and `fit_table` (what `scalelab fit` prints)."""
