"""The canonical episode: the AIR Blackbox agent-episode-store shape (DESIGN §3).

This model is the contract for one episode: adapters and the sample generator build it, the
`schemas` command publishes it, and it states the derivation rules (final output, tool
sequence, task identity) in Python. The bulk path applies the same rules to whole partitions
in DuckDB (`warehouse/ingest.py`); a test holds the two to the same answers.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, date, datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, field_validator, model_validator

from eval_pipeline.episodes.records import EARLIEST_DAY, is_iso_timestamp, latest_day, plausible_day


class EpisodeStatus(StrEnum):
    """How the run ended: `success` is the baseline-eligible outcome; `running` is not finished yet."""

    RUNNING = "running"
    SUCCESS = "success"
    FAILURE = "failure"
    TIMEOUT = "timeout"
    KILLED = "killed"


class StepType(StrEnum):
    """What a step is: an LLM call, a tool call and its result, a decision, or an error."""

    LLM_CALL = "llm_call"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    DECISION = "decision"
    ERROR = "error"


def _iso_text(value: Any) -> Any:
    if value is None or isinstance(value, datetime):
        return value
    if not (isinstance(value, str) and is_iso_timestamp(value)):
        raise ValueError(f"{value!r} is not an ISO 8601 timestamp")
    return value


def _given_as_number(value: Any) -> Any:
    """A number must come as one: pydantic's lax mode would read the text "5" as 5 and true as 1, which the
    warehouse rejects (`warehouse/ingest.py`); a whole number written 5.0 is still a count."""
    if isinstance(value, str | bool):
        raise ValueError(f"{value!r} is not a number")
    return value


Count = Annotated[int, BeforeValidator(_given_as_number), Field(le=2**63 - 1)]  # the warehouse's BIGINT holds it
Amount = Annotated[float, BeforeValidator(_given_as_number)]


class Tags(BaseModel):
    """The metadata tags the pipeline reads, typed as the warehouse reads them (`warehouse/ingest.py` `_TAGS`): "2" or
    1.5 is no trial, "yes" or 1 no pin; every other key is kept as given."""

    model_config = ConfigDict(extra="allow")

    trial: Annotated[Count, Field(ge=0, le=2**31 - 1)] | None = None  # the warehouse's INTEGER holds it
    baseline: StrictBool | None = None
    reward: Annotated[Amount, Field(allow_inf_nan=False)] | None = None


class Step(BaseModel):
    """One step of the run; steps are ordered by `step_index`, not by their place in the list."""

    model_config = ConfigDict(extra="allow")

    step_index: Count = Field(ge=0, description="the step's position in the run, unique within it")
    step_type: StepType = Field(description="llm_call, tool_call, tool_result, decision or error")
    air_record_id: str | None = Field(None, description="the AIR Blackbox record this step came from, if any")
    tool_name: str | None = Field(None, description="the tool called (tool_call) or answering (tool_result)")
    model: str | None = Field(None, description="the LLM of an llm_call, e.g. gpt-4o-mini")
    provider: str | None = Field(None, description="who served the model, e.g. openai")
    input_summary: str | None = Field(
        None, description="what went in: the first llm_call's is the user's message (the task, without a task_id)"
    )
    output_summary: str | None = Field(
        None, description="what came out: the last llm_call's is the answer, unless metadata.final_output says it"
    )
    tokens: Count = Field(0, ge=0, description="tokens of this step, input and output together")
    cost_usd: Amount = Field(0.0, ge=0, allow_inf_nan=False, description="what this step cost, in US dollars")
    duration_ms: Amount = Field(0.0, ge=0, allow_inf_nan=False, description="how long this step took, in milliseconds")
    timestamp: datetime | None = Field(None, description="when the step began, ISO 8601 (UTC when no offset is given)")
    error: str | None = Field(None, description="the error message of an error step, or of a tool that failed")
    metadata: dict[str, Any] = Field(default_factory=dict, description="anything else; `tools`: the tools offered to an llm_call")

    @field_validator("timestamp", mode="before")
    @classmethod
    def _iso_8601(cls, value: Any) -> Any:
        return _iso_text(value)

    @property
    def is_error(self) -> bool:
        return self.step_type is StepType.ERROR or bool(self.error)

    @property
    def offered_tools(self) -> list[str]:
        """The tools this LLM call was offered: `metadata.tools`, as the request's `tools` (`ingest.py` matches it)."""
        return tool_names(self.metadata.get("tools"))


class Episode(BaseModel):
    """One recorded run of an agent on a task; the day it is evaluated on is its `started_at` date (UTC)."""

    model_config = ConfigDict(extra="allow")

    episode_id: str = Field(min_length=1, description="unique across all episodes; a re-sent id replaces the earlier record")
    agent_id: str = Field(min_length=1, description="the agent (or agent version) that ran; baselines are per agent and task")
    status: EpisodeStatus = Field(description="how the run ended: running, success, failure, timeout or killed")
    steps: list[Step] = Field(default_factory=list, description="the run's LLM calls, tool calls and results, in any order")
    tools_used: list[str] = Field(default_factory=list, description="the tools called, each once (the sequence is in `steps`)")
    total_tokens: Count | None = Field(None, ge=0, description="tokens of the whole run; missing: the sum over the steps")
    total_cost_usd: Amount | None = Field(
        None, ge=0, allow_inf_nan=False, description="cost of the whole run in US dollars; missing: the sum over the steps"
    )
    total_duration_ms: Amount | None = Field(
        None, ge=0, allow_inf_nan=False, description="wall time of the run in milliseconds; missing: the sum over the steps"
    )
    step_count: int | None = Field(None, description="how many steps the run had; missing: len(steps)")
    started_at: datetime = Field(description="when the run began, ISO 8601 (UTC when no offset is given); sets its day")
    ended_at: datetime | None = Field(None, description="when the run ended; missing while running")
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="`task_id`: the task (without it, `auto-` and a hash of the first llm_call's input_summary, and the "
        "day's report names the episode); `trial`: which attempt at the task (pass@k); `category`: the task's group in "
        "the report; `final_output`: the answer (without it, the last llm_call's output_summary); `baseline`: true pins "
        "this run as its task's baseline; anything else is kept",
    )

    @model_validator(mode="after")
    def _totals_from_steps(self) -> Episode:
        if self.total_tokens is None:
            self.total_tokens = sum(s.tokens for s in self.steps)
        if self.total_cost_usd is None:
            self.total_cost_usd = sum(s.cost_usd for s in self.steps)
        if self.total_duration_ms is None:
            self.total_duration_ms = sum(s.duration_ms for s in self.steps)
        return self

    @field_validator("started_at", "ended_at", mode="before")
    @classmethod
    def _iso_8601(cls, value: Any) -> Any:
        """Only ISO 8601 text, read as the warehouse reads it (episodes/records.ISO_TIMESTAMP)."""
        return _iso_text(value)

    @field_validator("started_at")
    @classmethod
    def _plausible(cls, value: datetime) -> datetime:
        day = (value.astimezone(UTC) if value.tzinfo else value).date()
        if not plausible_day(day):
            raise ValueError(f"{day} is not between {EARLIEST_DAY} and {latest_day()} (tomorrow): a broken clock")
        return value

    @field_validator("metadata")
    @classmethod
    def _typed_tags(cls, value: dict[str, Any]) -> dict[str, Any]:
        Tags.model_validate(value)
        return value

    @model_validator(mode="after")
    def _distinct_step_indexes(self) -> Episode:
        if len({s.step_index for s in self.steps}) < len(self.steps):
            raise ValueError("step_index repeats: each step needs its own")
        return self

    @field_validator("started_at", "ended_at")
    @classmethod
    def _aware_utc(cls, value: datetime | None) -> datetime | None:
        """Naive timestamps are taken as UTC, as the store writes them."""
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    def ordered_steps(self) -> list[Step]:
        return sorted(self.steps, key=lambda step: step.step_index)

    @property
    def partition_date(self) -> date:
        return self.started_at.date()

    @property
    def tools(self) -> list[str]:
        """The full tool-call sequence in order, repeats kept (`tools_used` is deduplicated)."""
        return [s.tool_name or "" for s in self.ordered_steps() if s.step_type is StepType.TOOL_CALL]

    @property
    def available_tools(self) -> list[str]:
        """The tools the run could call, by name: `metadata.available_tools`, `metadata.tools` and those offered to
        any of its LLM calls. Empty when the source recorded none: unknown, not none. (`warehouse/assertions.py`
        matches it.)"""
        declared = tool_names(self.metadata.get("available_tools")) + tool_names(self.metadata.get("tools"))
        return list(dict.fromkeys(declared + [name for step in self.ordered_steps() for name in step.offered_tools]))

    @property
    def final_output(self) -> str | None:
        """`metadata.final_output`, else the output of the last LLM call."""
        if self.metadata.get("final_output") is not None:
            return str(self.metadata["final_output"])
        llm_calls = [s for s in self.ordered_steps() if s.step_type is StepType.LLM_CALL]
        return llm_calls[-1].output_summary if llm_calls else None

    @property
    def task_id(self) -> str:
        """`metadata.task_id`, else a stable hash of its first user message."""
        if self.metadata.get("task_id") is not None:
            return str(self.metadata["task_id"])
        llm_calls = [s for s in self.ordered_steps() if s.step_type is StepType.LLM_CALL]
        return derived_task_id(llm_calls[0].input_summary if llm_calls else None)


def tool_names(value: Any) -> list[str]:
    """Tool names from a list of names or of definitions: OpenAI's `{"type": "function", "function": {"name"}}`,
    or `{"name"}` (Anthropic, MCP); anything else names none. (`ingest.py` matches it.)"""
    return [name for name in map(_tool_name, value) if name] if isinstance(value, list) else []


def _tool_name(item: Any) -> str | None:
    if isinstance(item, str):
        return item
    if not isinstance(item, dict):
        return None
    function = item.get("function")
    name = function.get("name") if isinstance(function, dict) and function.get("name") is not None else item.get("name")
    return name if isinstance(name, str) else None


DERIVED_TASK_PREFIX = "auto-"  # a task id derived from the first user message, not recorded


def derived_task_id(first_user_message: str | None) -> str:
    """Runs opening with the same message share it, whichever agent or file they come from, so trials of
    one task group and two agents' runs of it compare. (`ingest.py` matches it.)"""
    digest = hashlib.md5((first_user_message or "").encode()).hexdigest()
    return f"{DERIVED_TASK_PREFIX}{digest[:16]}"
