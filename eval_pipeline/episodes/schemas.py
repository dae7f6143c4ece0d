"""JSON Schemas of what the pipeline reads, from the pydantic models, for tools in other languages."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, RootModel

from eval_pipeline.capture.cases import CaseSpec, EvalCase
from eval_pipeline.capture.headless import HeadlessSchema
from eval_pipeline.episodes.adapters import plaited
from eval_pipeline.episodes.adapters.autogen import AutoGenEvent, AutoGenTaskResult
from eval_pipeline.episodes.adapters.autogen_events import AutoGenLogEvent
from eval_pipeline.episodes.adapters.langgraph import LangGraphEvent
from eval_pipeline.episodes.adapters.openai_transcript import TranscriptRecord
from eval_pipeline.episodes.model import Episode
from eval_pipeline.scoring.cases import Case


class OtlpExport(BaseModel):
    """An OTLP JSON trace export (ExportTraceServiceRequest): resourceSpans → scopeSpans → spans."""

    model_config = ConfigDict(extra="allow")

    resourceSpans: list[dict[str, Any]]


class LangGraphState(BaseModel):
    model_config = ConfigDict(extra="allow")

    messages: list[dict[str, Any]] = Field(
        default_factory=list, description="messages as dumpd(), model_dump() or {role, content, tool_calls} dicts"
    )


class LangGraphCheckpointData(BaseModel):
    """A `Checkpoint`, as `checkpointer.get(config)` returns it."""

    model_config = ConfigDict(extra="allow")

    id: str | None = None
    ts: str | None = Field(None, description="ISO 8601: when it was taken")
    channel_values: LangGraphState


class LangGraphCheckpointTuple(BaseModel):
    """A `CheckpointTuple` of `checkpointer.list(config)` or `get_tuple(config)`, `._asdict()`."""

    model_config = ConfigDict(extra="allow")

    config: dict[str, Any] = Field(description="configurable.thread_id: its thread; configurable.checkpoint_ns: a subgraph's")
    checkpoint: LangGraphCheckpointData
    metadata: dict[str, Any] = Field(default_factory=dict, description="step orders a thread's checkpoints")
    pending_writes: list[list[Any]] = Field(default_factory=list, description="[task, channel, value]; __error__ fails the run")


class LangGraphStateSnapshot(BaseModel):
    """A `StateSnapshot` of `graph.get_state_history(config)`, `._asdict()`."""

    model_config = ConfigDict(extra="allow")

    values: LangGraphState
    config: dict[str, Any]
    metadata: dict[str, Any] | None = None
    created_at: str | None = None
    tasks: list[Any] = Field(default_factory=list, description="a task's error fails the run")


class AgentEvalCheckpoint(BaseModel):
    model_config = ConfigDict(extra="allow")

    checkpoint_id: str | None = None
    timestamp: str | None = None
    channel_values: LangGraphState
    metadata: dict[str, Any] = Field(default_factory=dict)


class AgentEvalCheckpoints(BaseModel):
    """agent-eval's checkpoint file: `{"checkpoints": [...]}`, oldest first."""

    checkpoints: list[AgentEvalCheckpoint | LangGraphCheckpointTuple | LangGraphStateSnapshot]


class LangGraphCheckpoint(
    RootModel[LangGraphCheckpointTuple | LangGraphStateSnapshot | LangGraphCheckpointData | AgentEvalCheckpoints]
):
    """One LangGraph checkpoint as users save it (a JSON line, list element or indented document); each thread's
    latest is an episode."""


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
    "autogen-log-event": (AutoGenLogEvent, "one line of AutoGen's event logger (EVENT_LOGGER_NAME) through a FileHandler"),
    "langgraph-checkpoint": (LangGraphCheckpoint, "one LangGraph checkpoint, tuple or state snapshot, saved as JSON"),
}


def json_schema(name: str) -> dict[str, Any]:
    return SCHEMAS[name][0].model_json_schema(by_alias=True)
