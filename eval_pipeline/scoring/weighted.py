"""The weighted score: dimensions on a common 0..1 scale, weights renormalized over what exists."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from eval_pipeline.scoring.dimensions import dimensions


def units(values: Mapping[str, pd.Series]) -> dict[str, pd.Series]:
    """Each registered dimension's values (by name) on the weighted score's 0..1 scale."""
    return {d.name: d.unit(values[d.name]) for d in dimensions()}


def weighted_score(units: Mapping[str, pd.Series], weights: Mapping[str, float]) -> pd.Series:
    """Σ wᵢ·uᵢ / Σ wᵢ over the dimensions present in each row; NaN when none is."""
    frame = pd.DataFrame(dict(units))
    w = np.array([weights.get(name, 0.0) for name in frame.columns], dtype=float)
    present = frame.notna().to_numpy()
    values = frame.fillna(0.0).to_numpy()
    total_weight = (present * w).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = (values * w).sum(axis=1) / total_weight
    return pd.Series(np.where(total_weight > 0, score, np.nan), index=frame.index)
