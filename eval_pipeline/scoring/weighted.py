"""The weighted score: dimensions on a common 0..1 scale, weights renormalized over what exists."""

from __future__ import annotations

import numpy as np
import pandas as pd

from eval_pipeline.config import Weights


def delta_to_unit(delta_pct: pd.Series) -> pd.Series:
    """1.0 for any improvement (an improvement never costs points), max(0, 1 − delta/100) for a rise."""
    return (1.0 - delta_pct.clip(lower=0.0) / 100.0).clip(lower=0.0)


def weighted_score(units: dict[str, pd.Series], weights: Weights) -> pd.Series:
    """Σ wᵢ·uᵢ / Σ wᵢ over the dimensions present in each row; NaN when none is."""
    frame = pd.DataFrame(units)
    w = np.array([getattr(weights, name) for name in frame.columns], dtype=float)
    present = frame.notna().to_numpy()
    values = frame.fillna(0.0).to_numpy()
    total_weight = (present * w).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = (values * w).sum(axis=1) / total_weight
    return pd.Series(np.where(total_weight > 0, score, np.nan), index=frame.index)
