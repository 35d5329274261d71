"""`python -m scalelab ...` (what `torchrun -m scalelab train ...` runs)."""

from scalelab.cli import main

main()
