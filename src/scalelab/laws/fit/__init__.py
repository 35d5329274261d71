"""Fits with bootstrap intervals: the one-variable power law (`power_law`), the joint law
(`chinchilla`), the checks of their input (`inputs`), the fitted law as a record that report/
draws (`fitted`) and the batched L-BFGS they run on (`batched_lbfgs`)."""
