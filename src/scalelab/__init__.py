"""scalelab: scaling laws from intrinsic dimension, and depth separation on induction heads."""

__version__ = "0.1.0"
