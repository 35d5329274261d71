"""scalelab.induction."""
