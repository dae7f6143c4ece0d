"""plaited's headless adapter schemas (version 1), read unchanged: any CLI agent that prints JSON events.

A schema says how to start the agent (`command`, `prompt`, `output`, `cwdFlag`), which of its
stdout lines are trajectory events (`outputEvents`: a JSONPath `match` and what to `extract`),
which line is the final result (`result`) and how a multi-turn case runs: `stream` starts one
process per turn and resumes the agent's own session (`resume`), `iterative` starts a fresh
process per turn with the conversation so far in the prompt (`historyTemplate`). The turns become
one plaited `CaptureResult`, which the plaited adapter turns into our episode.

`autoApprove` flags switch off an agent's permission prompts or sandbox, so they are passed only
when the case set opts in (`[capture] auto_approve = true`).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeGuard, get_args

from pydantic import BaseModel, Field, ValidationError, model_validator

from eval_pipeline.capture.cases import CaseSpec
from eval_pipeline.capture.process import History, Run, prepared, spawn

UpdateType = Literal["thought", "tool_call", "message", "plan"]


class SchemaError(ValueError):
    """The adapter schema cannot be used; the message says which file and why."""


class _Match(BaseModel):
    path: str
    value: str


class _Extract(BaseModel):
    content: str | None = None
    title: str | None = None
    status: str | None = None


class _OutputEvent(BaseModel):
    match: _Match
    emitAs: UpdateType
    extract: _Extract | None = None


class _Prompt(BaseModel):
    flag: str | None = None
    stdin: bool | None = None
    stdinFormat: Literal["text"] | None = None  # "json" is not supported: its shape is not documented

    @model_validator(mode="after")
    def _one_way(self) -> _Prompt:
        if self.flag and self.stdin:
            raise ValueError("prompt: use either a flag or stdin, not both")
        return self


class _Output(BaseModel):
    flag: str
    value: str


class _Resume(BaseModel):
    flag: str
    sessionIdPath: str


class _Result(BaseModel):
    matchPath: str
    matchValue: str
    contentPath: str


class _Passthrough(BaseModel):
    typeField: str = "type"
    typeValues: dict[str, UpdateType] | None = None


class _History(BaseModel):
    system: str | None = None
    turnFormat: str


class HeadlessSchema(BaseModel):
    """plaited's `HeadlessAdapterConfig`; unknown keys are ignored, as plaited's own parser does."""

    version: Literal[1]
    name: str
    command: list[str] = Field(min_length=1)
    sessionMode: Literal["stream", "iterative"]
    timeout: float | None = Field(None, gt=0)  # milliseconds
    prompt: _Prompt
    output: _Output
    autoApprove: list[str] | None = None
    resume: _Resume | None = None
    cwdFlag: str | None = None
    outputMode: Literal["jsonpath", "passthrough"] = "jsonpath"
    outputEvents: list[_OutputEvent] | None = None
    passthroughTypeMap: _Passthrough | None = None
    result: _Result
    historyTemplate: str | _History | None = None


def load_schema(path: Path) -> HeadlessSchema:
    try:
        return HeadlessSchema.model_validate(json.loads(path.read_text()))
    except OSError as exc:
        raise SchemaError(f"adapter schema {path}: {exc}") from None
    except (ValueError, ValidationError) as exc:
        raise SchemaError(f"adapter schema {path}: {str(exc).splitlines()[0]} {str(exc).splitlines()[1:2]}") from None


_SEGMENT = re.compile(r"\.([^.\[\]]+)|\[(\d+|\*)\]")


def json_path(document: Any, path: str) -> Any:
    """plaited's JSONPath subset: `$.a.b`, `$.a[0]`, `$.a[*]` (the array itself), or a `'literal'`.

    None when the path does not resolve.
    """
    if len(path) >= 2 and path.startswith("'") and path.endswith("'"):
        return path[1:-1]
    if not path.startswith("$."):
        return None
    current = document
    for name, index in _SEGMENT.findall(path[1:]):
        if current is None:
            return None
        if index == "*":
            return current if isinstance(current, list) else None
        if index:
            current = current[int(index)] if isinstance(current, list) and int(index) < len(current) else None
        else:
            current = current.get(name) if isinstance(current, dict) else None
    return current


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value) if isinstance(value, dict | list) else str(value)


@dataclass(frozen=True)
class Update:
    """One trajectory event the agent printed."""

    type: UpdateType
    content: str | None = None
    title: str | None = None
    status: str | None = None


def _update(event: Any, emit_as: UpdateType, extract: _Extract | None) -> Update:
    if extract is None:
        return Update(emit_as)
    fields = {name: _text(json_path(event, path)) for name, path in extract.model_dump(exclude_none=True).items()}
    return Update(emit_as, **fields)


def _is_update_type(kind: Any) -> TypeGuard[UpdateType]:
    return kind in get_args(UpdateType)


def _matches(value: Any, wanted: str) -> bool:
    return value is not None if wanted == "*" else value == wanted


def updates_of(event: Any, schema: HeadlessSchema) -> list[Update]:
    """The updates one stdout event stands for: the first mapping that matches wins.

    A match path ending in `[*]` matches each item of that array (an item's own `type` is
    compared when it has one), and the extraction then reads the item.
    """
    if schema.outputMode == "passthrough":
        passthrough = schema.passthroughTypeMap or _Passthrough()
        kind = event.get(passthrough.typeField) if isinstance(event, dict) else None
        kind = (passthrough.typeValues or {}).get(kind, kind) if isinstance(kind, str) else None
        if not _is_update_type(kind):
            return []
        return [Update(kind, _text(event.get("content")), _text(event.get("title")), _text(event.get("status")))]
    for mapping in schema.outputEvents or []:
        found = json_path(event, mapping.match.path)
        if isinstance(found, list):
            items = [
                item for item in found
                if _matches(item.get("type") if isinstance(item, dict) and "type" in item else item, mapping.match.value)
            ]  # fmt: skip
            if items:
                return [_update(item, mapping.emitAs, mapping.extract) for item in items]
        elif _matches(found, mapping.match.value):
            return [_update(event, mapping.emitAs, mapping.extract)]
    return []


@dataclass
class TurnOutput:
    """What one turn printed, read through the schema."""

    updates: list[Update] = field(default_factory=list)
    result: str | None = None
    session_id: str | None = None

    @property
    def answer(self) -> str:
        """The result line's content, else the turn's messages (as plaited falls back)."""
        if self.result is not None:
            return self.result
        return "\n".join(u.content for u in self.updates if u.type == "message" and u.content)


def read_turn(stdout: str, schema: HeadlessSchema) -> TurnOutput:
    turn = TurnOutput()
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # agents print banners and progress too
        turn.updates.extend(updates_of(event, schema))
        if _matches(json_path(event, schema.result.matchPath), schema.result.matchValue):
            turn.result = _text(json_path(event, schema.result.contentPath)) or ""
        if schema.resume and turn.session_id is None:
            turn.session_id = _text(json_path(event, schema.resume.sessionIdPath))
    return turn


def command_line(
    schema: HeadlessSchema, prompt: str, cwd: Path, session_id: str | None, auto_approve: bool
) -> tuple[list[str], str | None]:
    """The argv of one turn (the prompt its own element, never a shell string) and what goes to stdin."""
    argv = [*schema.command]
    if schema.output.flag:
        argv += [schema.output.flag, schema.output.value]
    if auto_approve and schema.autoApprove:
        argv += schema.autoApprove
    if schema.cwdFlag:
        argv += [schema.cwdFlag, str(cwd)]
    if schema.sessionMode == "stream" and schema.resume and session_id:
        argv += [schema.resume.flag, session_id]
    if schema.prompt.stdin:
        return argv, prompt
    argv += [schema.prompt.flag, prompt] if schema.prompt.flag else [prompt]
    return argv, None


def _history(schema: HeadlessSchema) -> History:
    template = schema.historyTemplate
    if isinstance(template, _History):
        return History(template.turnFormat, template.system)
    return History(template) if template else History()


def _trajectory(updates: list[Update], started_ms: float) -> list[dict]:
    """plaited trajectory steps; a completed tool call closes the pending call of the same name."""
    steps: list[dict] = []
    pending: dict[str, dict] = {}
    for update in updates:
        if update.type == "tool_call":
            name = update.title or "tool"
            if name in pending and (update.status or "").lower() != "pending":
                pending.pop(name).update(status=update.status, output=update.content)
                continue
            step = {"type": "tool_call", "name": name, "status": update.status, "timestamp": started_ms}
            steps.append(step)
            if (update.status or "").lower() == "pending":
                pending[name] = step
            elif update.content is not None:
                step["output"] = update.content
        else:
            steps.append({"type": update.type, "content": update.content or "", "timestamp": started_ms})
    return steps


@dataclass(frozen=True)
class HeadlessAgent:
    """A CLI agent described by a plaited headless adapter schema."""

    schema: HeadlessSchema
    auto_approve: bool = False
    timeout_seconds: float = 300.0
    concurrency: int = 4

    def run(self, case: CaseSpec, trial: int, workdir: Path) -> Run:
        errors = prepared(workdir)
        budget = case.timeout_seconds or (self.schema.timeout / 1000 if self.schema.timeout else self.timeout_seconds)
        started, started_ms = time.perf_counter(), time.time() * 1000
        history, session_id = _history(self.schema), None
        updates: list[Update] = []
        answer = ""
        exit_code: int | None = 0  # None: killed at its timeout
        with errors.open("w") as stderr, workdir.parent.joinpath(f"{workdir.name}.events.jsonl").open("w") as events:
            for turn in case.turns:
                prompt = turn if self.schema.sessionMode == "stream" else history.prompt(turn)
                argv, stdin = command_line(self.schema, prompt, workdir, session_id, self.auto_approve)
                finished = spawn(argv, workdir, None, stdin, budget - (time.perf_counter() - started), stderr)
                events.write(finished.stdout)  # the raw event stream, kept for debugging
                output = read_turn(finished.stdout, self.schema)
                updates += output.updates
                session_id = session_id or output.session_id
                answer, exit_code = output.answer, finished.exit_code
                if exit_code != 0:
                    break
                history.add(turn, answer)
        ended_ms = time.time() * 1000
        capture = {
            "id": case.id,
            "input": case.input,
            "output": answer,
            "hint": case.hint,
            "trajectory": _trajectory(updates, started_ms),
            "metadata": {"adapter": self.schema.name, **({"session_id": session_id} if session_id else {})},
            "timing": {"start": started_ms, "end": ended_ms, "total": ended_ms - started_ms},
        }
        duration = (time.perf_counter() - started) * 1000
        return Run(case, trial, workdir, exit_code, (json.dumps(capture),), errors, duration)
