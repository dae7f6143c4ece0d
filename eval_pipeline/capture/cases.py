"""A case set: the cases a capture runs the agent on, each with its expectations.

Two formats, each as JSONL or a JSON array, told apart case by case: our own (`id`, `input`,
`hint`, `reference`, `metadata`, `timeout`, expectations), and the eval-case framework's
`data/eval_cases.json` as its users have it (`query`, a top-level `category`, no `id`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from eval_pipeline.episodes.files import iter_file_records
from eval_pipeline.errors import UserInputError
from eval_pipeline.scoring.cases import Case


class CaseSetError(UserInputError):
    """The case set cannot be read, or a case in it is invalid; the message names the case and the field."""


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


class EvalCase(BaseModel):
    """A case as the eval-case framework writes it; its expectations (`expected_tools`, ...) ride along."""

    model_config = ConfigDict(extra="allow")

    query: str | Annotated[list[str], Field(min_length=1)]
    category: str | None = None
    id: str | None = Field(None, min_length=1)
    metadata: dict[str, Any] = Field(default_factory=dict)

    def as_case(self, position: int) -> CaseSpec:
        """Ours: the query is the input, the category `metadata.category`, the id derived when absent, and
        `expected_tools` met when all of them were used (`tool_match = "superset"`), as that framework checks."""
        expectations = {"tool_match": "superset", **(self.model_extra or {})}
        metadata = {**({"category": self.category} if self.category else {}), **self.metadata}
        case_id = self.id or derived_id(position, self.query)
        return CaseSpec.model_validate({**expectations, "id": case_id, "input": self.query, "metadata": metadata})


def derived_id(position: int, query: str | list[str]) -> str:
    """`case-003-1a2b3c`: the case's place in the file and a hash of its query, so re-runs agree, editing
    another case changes nothing, and a case that moves or changes its query never takes another's history."""
    text = query if isinstance(query, str) else json.dumps(query)
    return f"case-{position:03d}-{hashlib.sha256(text.encode()).hexdigest()[:6]}"


def load_case_set(path: Path) -> list[CaseSpec]:
    """Every case of a JSONL file or JSON array, in order; a bad case or a repeated id is an error naming
    the line, the case (its id, else its position) and the field."""
    cases: list[CaseSpec] = []
    seen: set[str] = set()
    try:
        records = list(iter_file_records(path))
    except OSError as exc:
        raise CaseSetError(f"case set {path}: {exc}") from None
    for position, record in enumerate(records, 1):
        where = f"case set {path}:{record.line}"
        if record.undecodable:
            raise CaseSetError(f"{where}: {record.undecodable}")
        try:
            entry = json.loads(record.raw)
        except ValueError as exc:
            raise CaseSetError(f"{where}: not JSON: {exc}") from None
        if not isinstance(entry, dict):
            raise CaseSetError(f"{where}: case {position}: not a JSON object")
        named = f"case {entry['id']!r}" if isinstance(entry.get("id"), str) and entry["id"] else f"case {position}"
        try:
            case = _case(entry, position)
        except ValidationError as exc:
            raise CaseSetError(f"{where}: {named}: {_problems(exc)}") from None
        except re.error as exc:
            raise CaseSetError(f"{where}: {named}: expected_output_regex: {exc}") from None
        if case.id in seen:
            raise CaseSetError(f"{where}: duplicate id {case.id!r}")
        seen.add(case.id)
        cases.append(case)
    return cases


def _case(entry: dict[str, Any], position: int) -> CaseSpec:
    """The case in our format, its expectations checked now rather than when its runs are scored."""
    ours = "input" in entry or ("id" in entry and "query" not in entry)
    case = CaseSpec.model_validate(entry) if ours else EvalCase.model_validate(entry).as_case(position)
    Case.model_validate(case.expectations)
    return case


_UNION_MEMBERS = re.compile(r"^(str|int|float|bool|list|dict)\b")  # how pydantic names the alternatives of a union


def _problems(exc: ValidationError) -> str:
    """Each invalid field once, by its path: `query: Field required; expected_tools: Input should be a valid list`."""
    first_by_field: dict[Any, str] = {}
    for error in exc.errors():
        path = ".".join(str(part) for part in error["loc"] if not _UNION_MEMBERS.match(str(part)) or part == error["loc"][0])
        first_by_field.setdefault(error["loc"][0] if error["loc"] else "", f"{path}: {error['msg']}" if path else error["msg"])
    return "; ".join(first_by_field.values())


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


PROMOTED_PHRASES = 3  # key phrases of the answer a promoted case expects (any one of them, as the framework checks)
_TOKEN = re.compile(r"[\w$%][\w$%.,'/-]*[\w%]|[\w$%]")
_COMMON = frozenset(
    (  # noqa: SIM905 (a word list reads better as words)
        "about after again also been before being could does from have here into just more most other over please "
        "some sorry such than that their them then there these they this those through very were what when where "
        "which while will with would your"
    ).split()
)


def key_phrases(answer: str, limit: int = PROMOTED_PHRASES) -> list[str]:
    """The answer's most telling words: figures and identifiers first (they carry its facts), then capitalized names,
    then the longest other words; common words and words under four letters left out."""
    found: dict[str, tuple[int, str]] = {}
    for position, token in enumerate(_TOKEN.findall(answer)):
        word = token.strip(".,'/-")
        has_digit = any(c.isdigit() for c in word)
        if (len(word) < 4 and not has_digit) or word.casefold() in _COMMON:
            continue
        found.setdefault(word.casefold(), (position, word))
    ranked = sorted(
        found.values(),
        key=lambda item: (not any(c.isdigit() for c in item[1]), not item[1][:1].isupper(), -len(item[1]), item[0]),
    )
    return [word for _, word in ranked[:limit]]


def case_from_recording(episode_id: str, query: str, tools: list[str], answer: str, category: str | None) -> dict[str, Any]:
    """An eval-case (the framework's `data/eval_cases.json` format) that expects what a recorded episode did: the
    tools it called (all of them, in any order) and a key phrase of its answer."""
    case: dict[str, Any] = {
        "id": f"promoted-{episode_id}",
        **({"category": category} if category else {}),
        "query": query,
        "expected_tools": list(dict.fromkeys(tools)),
        "metadata": {"promoted_from": episode_id},
    }
    if phrases := key_phrases(answer):
        case["expected_output_contains"] = phrases
    EvalCase.model_validate(case).as_case(1)  # a case the loader reads back
    return case


def save_case(path: Path, case: dict[str, Any]) -> None:
    """Add `case` to the case set at `path` (a JSON array, or JSONL when the name ends in .jsonl), replacing a case with
    its id; the file is rewritten aside and moved into place, so a reader never sees half of it."""
    jsonl = path.suffix == ".jsonl"
    cases: list[dict[str, Any]] = []
    if path.exists():
        try:
            records = list(iter_file_records(path))
            cases = [json.loads(record.raw) for record in records]
        except (OSError, ValueError) as exc:
            raise CaseSetError(f"case set {path}: {exc}") from None
        if undecodable := next((record for record in records if record.undecodable), None):  # rewritten, it would be lost
            raise CaseSetError(f"case set {path}:{undecodable.line}: {undecodable.undecodable}")
    cases = [entry for entry in cases if not (isinstance(entry, dict) and entry.get("id") == case["id"])] + [case]
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    text = "".join(json.dumps(entry) + "\n" for entry in cases) if jsonl else json.dumps(cases, indent=2) + "\n"
    partial.write_text(text)
    os.replace(partial, path)
