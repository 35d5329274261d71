"""Predicted exponents compared with observed ones: each source of predictions scored beside
baselines that ignore d (`baselines`), with a paired bootstrap over corpora (`bootstrap`)."""
