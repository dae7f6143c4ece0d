"""JSON Schemas of what the pipeline reads, from the pydantic models, for tools in other languages."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from eval_pipeline.capture.cases import CaseSpec
from eval_pipeline.capture.headless import HeadlessSchema
from eval_pipeline.episodes.adapters import plaited
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


SCHEMAS: dict[str, tuple[type[BaseModel], str]] = {
    "episode": (Episode, "the canonical episode (AIR episode-store shape): what every source becomes"),
    "case": (Case, "case expectations, in metadata.expected or the cases file"),
    "openai-transcript": (TranscriptRecord, TranscriptRecord.__doc__ or ""),
    "otlp-json": (OtlpExport, OtlpExport.__doc__ or ""),
    "case-set": (CaseSpec, "one line of a case set the capture step runs the agent on ([capture] case_set)"),
    "headless-adapter": (HeadlessSchema, "plaited headless adapter schema (version 1) of a CLI agent ([capture] schema)"),
    "plaited-capture": (plaited.CaptureResult, "plaited agent-eval-harness CaptureResult: one run of a case"),
    "plaited-trials": (plaited.TrialResult, "plaited agent-eval-harness TrialResult: k runs of a case"),
}


def json_schema(name: str) -> dict[str, Any]:
    return SCHEMAS[name][0].model_json_schema(by_alias=True)
