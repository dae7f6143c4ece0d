"""A case set: JSONL of prompts with expectations, the input of a capture."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class CaseSetError(ValueError):
    """The case set cannot be read; the message says which line and why."""


class CaseSpec(BaseModel):
    """One case: `input` is a prompt, or a list of prompts for one multi-turn session."""

    model_config = ConfigDict(extra="allow")  # expectation fields (expected_tools, ...) ride along

    id: str = Field(min_length=1)
    input: str | Annotated[list[str], Field(min_length=1)]
    hint: str | None = None
    reference: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    timeout: float | None = Field(None, gt=0, description="this case's time limit in milliseconds, as plaited has it")

    @property
    def timeout_seconds(self) -> float | None:
        """The case's own time limit in seconds, None when it sets none."""
        return self.timeout / 1000 if self.timeout else None

    @property
    def turns(self) -> list[str]:
        """The prompts of the session, in order: one for a single-turn case."""
        return [self.input] if isinstance(self.input, str) else list(self.input)

    @property
    def expectations(self) -> dict[str, Any]:
        """The case-expectation fields it carries (see scoring/cases.py), plus its reference."""
        extra = dict(self.model_extra or {})
        return {**extra, **({"reference": self.reference} if self.reference else {})}


def load_case_set(path: Path) -> list[CaseSpec]:
    """Every case of a JSONL file, in order; a bad line or a repeated id is an error naming the line."""
    cases, seen = [], set()
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise CaseSetError(f"case set {path}: {exc}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            case = CaseSpec.model_validate(json.loads(line))
        except (ValueError, ValidationError) as exc:
            raise CaseSetError(f"case set {path}:{number}: {str(exc).splitlines()[0]}") from None
        if case.id in seen:
            raise CaseSetError(f"case set {path}:{number}: duplicate id {case.id!r}")
        seen.add(case.id)
        cases.append(case)
    return cases


def balance(cases: list[CaseSpec], threshold: float = 0.5) -> dict[str, Any]:
    """How the case set covers its categories (`metadata.category`), as plaited's `balance` reads it.

    A category is under-represented below `threshold` of an even share; a case is negative when
    `metadata.negative` is true (the right behaviour is to decline or say no).
    """
    counts = Counter(str(case.metadata.get("category") or "(uncategorized)") for case in cases)
    total = len(cases)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    even = 1 / len(counts) if counts else 0
    negative = sum(bool(case.metadata.get("negative")) for case in cases)
    return {
        "cases": total,
        "categories": [{"category": name, "cases": n, "share": round(n / total, 4)} for name, n in ranked],
        "under_represented": [name for name, n in ranked if n / total < even * threshold],
        "positive": total - negative,
        "negative": negative,
    }
