"""scalelab.intrinsic."""
