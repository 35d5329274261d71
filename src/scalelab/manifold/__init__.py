"""scalelab.manifold."""
