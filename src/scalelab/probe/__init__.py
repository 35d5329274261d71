"""The seed paper's protocol from a language model to points and d: corpus tokens (`corpus`),
windows and positions (`sample`), hidden states, MLE and exponents (`estimate`), ablations
(`ablate`)."""
