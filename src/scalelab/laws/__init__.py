"""scalelab.laws."""
