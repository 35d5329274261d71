"""Named random streams. A seeded draw takes `np.random.default_rng([seed, STREAM])` so that
draws for different purposes from the same user seed are independent and stable: adding a
new draw elsewhere never shifts an existing one. The values are arbitrary but fixed (changing
one changes every saved result that used it)."""

from __future__ import annotations

DOCUMENTS = 0xD0C  # probe: the seeded subset of documents (--max-docs)
SHUFFLE = 0x5A1  # probe: step 4's shuffle of all points before the cap
INDUCTION_DATA = 1  # induction training: the stream of task sequences
INDUCTION_EVAL = 2  # induction training: the fixed evaluation sequences
MANIFOLD_PROBLEM = 6  # manifold problem: the random embedding and target coefficients
MANIFOLD_TEST = 7  # manifold sweep: the fixed test set of each dimension
MANIFOLD_ID = 8  # manifold sweep: the points the dimension is estimated on
MANIFOLD_MEMBER = 9  # manifold sweep: the inits of an ensemble's members after the first
MANIFOLD_LEVER = 10  # manifold levers: the samples of the crossed noise design
MANIFOLD_IDEAL = 11  # manifold analysis: the fresh samples of E log ideal-learner risk
SYNTH_TABLES = 0x5E0  # synthetic corpora: the fixed maps (key spelling, values, transitions)
SYNTH_SAMPLES = 0x5E1  # synthetic corpora: the drawn documents
