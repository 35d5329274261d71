"""scalelab.sweeps."""
