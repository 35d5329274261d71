"""Fits with bootstrap intervals: the one-variable power law (`power_law`), the joint law
(`chinchilla`), the checks of their input (`inputs`), the fitted law as a record that report/
draws (`fitted`) and the batched L-BFGS they run on (`batched_lbfgs`)."""


def __getattr__(name: str):
    # Kept only for manifold/ (changed on another branch) until its imports name
    # `scalelab.laws.fit.power_law`; then this goes.
    if name == "fit_power_law":
        from scalelab.laws.fit.power_law import fit_power_law

        return fit_power_law
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
