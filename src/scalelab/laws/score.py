"""Kept only for manifold/ (changed on another branch) until its imports name
`scalelab.laws.compare.baselines`; then this module goes."""

from scalelab.laws.compare.baselines import score_sources, verdict  # noqa: F401
