"""Scores as rewards: what production alerts on is what training optimizes.

Named reward functions over an episode's scores and check issues (`functions`), the same
scoring for episodes outside the warehouse (`online`), an HTTP server around it (`server`),
bridges to trainers (`bridges`) and benchmarks of how well a reward ranks labelled runs
(`benchmark`). No Dagster and no SQL here.
"""
