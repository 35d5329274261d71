"""scalelab.lm."""
