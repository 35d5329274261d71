"""Forecasts of a larger run's loss from a few small runs: the fits (one law or the joint law;
`fits`), their scores on held-out runs (`holdout`), `scalelab forecast` as a library call
(`run`) and its defaults, read without numpy (`config`)."""
