"""Scores as rewards: what production alerts on is what training optimizes.

Named reward functions (`functions`) over an episode's scores and check issues (`inputs`); a
day's `rewards` rows (`records`); the same scoring for runs outside the warehouse (`online`), an
HTTP server around it (`server`) and bridges to trainers (`bridges`); and benchmarks of how well
a reward ranks labelled runs (`benchmark`). No Dagster and no SQL here.
"""
