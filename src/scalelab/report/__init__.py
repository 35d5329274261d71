"""scalelab.report."""
