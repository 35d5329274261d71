"""Kept only for manifold/ (changed on another branch) until its imports name
`scalelab.laws.regime.analysis`; then this module goes."""

from scalelab.laws.regime.analysis import analyse_regime  # noqa: F401
