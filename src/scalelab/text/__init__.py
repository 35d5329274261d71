"""scalelab.text."""
