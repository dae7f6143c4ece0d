"""JSON Schemas of what the pipeline reads, from the pydantic models, for tools in other languages."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from eval_pipeline.capture.cases import CaseSpec, EvalCase
from eval_pipeline.capture.headless import HeadlessSchema
from eval_pipeline.episodes.adapters import autogen, plaited
from eval_pipeline.episodes.model import Episode
from eval_pipeline.scoring.cases import Case


class TranscriptRecord(BaseModel):
    """An OpenAI chat transcript, as tau-bench publishes trajectories."""

    model_config = ConfigDict(extra="allow")

    task_id: str | int
    trial: int = 0
    reward: float | None = None
    traj: list[dict[str, Any]] = Field(description="OpenAI chat messages: system, user, assistant (with tool_calls), tool")
    info: dict[str, Any] | None = None


class OtlpExport(BaseModel):
    """An OTLP JSON trace export (ExportTraceServiceRequest): resourceSpans → scopeSpans → spans."""

    model_config = ConfigDict(extra="allow")

    resourceSpans: list[dict[str, Any]]


class LangGraphEvent(BaseModel):
    """One LangGraph `astream_events(version="v2")` event; a file is a JSON list of them or `{"events": [...]}`."""

    model_config = ConfigDict(extra="allow")

    event: str = Field(pattern=r"^on_", description="on_chat_model_start|end, on_tool_start|end, on_chain_start|end, ...")
    name: str | None = None
    run_id: str
    parent_ids: list[str] = Field(default_factory=list, description="outermost first: the root run is parent_ids[0]")
    data: dict[str, Any] = Field(default_factory=dict, description="input / output; messages as dumpd() or model_dump()")
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class AutoGenUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int


class AutoGenEvent(BaseModel):
    """One AutoGen AgentChat event or message, its own `model_dump(mode="json")`, a JSONL line each."""

    model_config = ConfigDict(extra="allow")

    type: Literal[tuple(sorted(autogen.EVENTS))]  # type: ignore[valid-type]
    source: str
    models_usage: AutoGenUsage | None = None
    content: Any = None
    created_at: str | None = None
    id: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)


class AutoGenTaskResult(BaseModel):
    """The `TaskResult` that closes a run (`run_stream`'s last item, or what `run()` returns)."""

    messages: list[AutoGenEvent]
    stop_reason: str | None = None


SCHEMAS: dict[str, tuple[type[BaseModel], str]] = {
    "episode": (Episode, "the canonical episode (AIR episode-store shape): what every source becomes"),
    "case": (Case, "case expectations, in metadata.expected or the cases file"),
    "openai-transcript": (TranscriptRecord, TranscriptRecord.__doc__ or ""),
    "otlp-json": (OtlpExport, OtlpExport.__doc__ or ""),
    "case-set": (CaseSpec, "one case of a case set the capture step runs the agent on ([capture] case_set)"),
    "eval-case": (EvalCase, "one case of an eval-case file (data/eval_cases.json), also read as a case set"),
    "headless-adapter": (HeadlessSchema, "plaited headless adapter schema (version 1) of a CLI agent ([capture] schema)"),
    "plaited-capture": (plaited.CaptureResult, "plaited agent-eval-harness CaptureResult: one run of a case"),
    "plaited-trials": (plaited.TrialResult, "plaited agent-eval-harness TrialResult: k runs of a case"),
    "langgraph-event": (LangGraphEvent, LangGraphEvent.__doc__ or ""),
    "autogen-event": (AutoGenEvent, AutoGenEvent.__doc__ or ""),
    "autogen-task-result": (AutoGenTaskResult, AutoGenTaskResult.__doc__ or ""),
}


def json_schema(name: str) -> dict[str, Any]:
    return SCHEMAS[name][0].model_json_schema(by_alias=True)
