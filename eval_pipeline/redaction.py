"""Secrets that agents leak: one pattern set finds them for scoring and hides them in alerts and reports."""

from __future__ import annotations

import re
from functools import lru_cache

KEPT_PREFIX = 3  # enough to say which kind of key it was ("sk-", "AKI", "ghp")


@lru_cache(maxsize=32)
def secret_regex(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """All patterns as one case-insensitive regex; None when there are none."""
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE) if patterns else None


def redact(text: str, patterns: tuple[str, ...]) -> str:
    """Each secret becomes its first characters and `…[redacted]`, e.g. `sk-…[redacted]`."""
    regex = secret_regex(patterns)
    return regex.sub(lambda match: match.group(0)[:KEPT_PREFIX] + "…[redacted]", text) if regex else text


def excerpt(text: str, patterns: tuple[str, ...], limit: int) -> str:
    """Untrusted text as a report shows it: secrets redacted, at most `limit` characters (then `…`)."""
    shown = redact(text, patterns)
    return shown if len(shown) <= limit else shown[:limit] + "…"
