"""Intrinsic dimension from arrays: exact k-NN, the MLE/TwoNN/calibrated estimators and the
paper's batch protocol (pure: arrays in, numbers out). The protocol's constants live here so
that configs and the CLI read them without importing the estimators."""

ESTIMATORS = ("mle", "twonn", "mle-calibrated")
PAPER_K = 20  # neighbours of the seed paper's MLE
PAPER_BATCH_SIZE = 4096  # points per MLE batch (the paper's code used chunks of 3600)
