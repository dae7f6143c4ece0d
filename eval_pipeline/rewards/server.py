"""`eval-pipeline serve-rewards`: the reward functions over HTTP, for training loops in any language.

`POST /reward` takes one batch and answers its rewards in order; nothing is kept between requests.
Body (JSON, at most MAX_BODY bytes, at most MAX_BATCH items):

    {"reward": "safe_overall",            # optional: a configured reward; default [rewards] default
     "episodes": [<canonical episode>],   # either full runs (the `schemas episode` shape) ...
     "pairs": [{"prompt": "...", "completion": "...", "expected": {<case>}}],  # ... or single turns
     "breakdown": false}                  # optional: also answer each reward's breakdown

A prompt or completion is a string or a list of chat messages (`{"role", "content"}`); `expected`
is optional and takes the case format (`reference`, `expected_output_contains`, ...). The answer is
`{"reward": NAME, "rewards": [float or null, ...]}` (+ `"breakdowns"`). Errors are JSON
`{"error": "..."}`: 400 for a body that is not JSON, 413 for one too large, 422 for a wrong shape.
`GET /health` answers `{"status": "ok", "scorers": [...], "rewards": [...], "default": NAME}`.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from eval_pipeline import jsonout
from eval_pipeline.config import EvalConfig
from eval_pipeline.episodes.adapters.base import parse
from eval_pipeline.episodes.model import Episode
from eval_pipeline.rewards.online import ONLINE_SCORERS, online_rewards, pair_episode
from eval_pipeline.scoring.cases import Case

MAX_BODY = 8 * 1024 * 1024
MAX_BATCH = 1024
Conversation = str | list[dict[str, Any]]


class Pair(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prompt: Conversation
    completion: Conversation
    expected: dict[str, Any] | None = None

    @field_validator("prompt", "completion", mode="before")
    @classmethod
    def _text_or_messages(cls, value: Any) -> Any:
        if isinstance(value, str) or (isinstance(value, list) and all(isinstance(m, dict) for m in value)):
            return value
        raise ValueError('must be a string or a list of {"role", "content"} messages')


class RewardRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reward: str | None = None
    episodes: list[Episode] | None = Field(None, min_length=1, max_length=MAX_BATCH)
    pairs: list[Pair] | None = Field(None, min_length=1, max_length=MAX_BATCH)
    breakdown: bool = False

    @model_validator(mode="after")
    def _one_batch(self) -> RewardRequest:
        if (self.episodes is None) == (self.pairs is None):
            raise ValueError('give exactly one of "episodes" or "pairs"')
        return self


def _error_body(message: str) -> bytes:
    return jsonout.dumps({"error": message}).encode()


def _error(status: int, message: str) -> web.Response:
    return web.Response(body=_error_body(message), status=status, content_type="application/json")


def _first_problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg']}" if where else first["msg"]


def _answer(body: bytes, config: EvalConfig, cases: dict[str, Case]) -> tuple[int, bytes]:
    """A request body's HTTP status and JSON answer. Parsing and scoring take CPU in proportion to the body, so the
    server runs this in a worker thread: the event loop stays free to answer /health and other requests meanwhile."""
    try:
        data = parse(body.decode())  # as strictly as the pipeline reads records: NaN is no JSON, depth is bounded
    except ValueError as exc:
        return 400, _error_body(f"body is not JSON: {exc}")
    try:
        parsed = RewardRequest.model_validate(data)
    except ValidationError as exc:
        return 422, _error_body(_first_problem(exc))
    name = parsed.reward or config.rewards.default
    if name not in config.rewards.define:
        return 422, _error_body(f"reward: no reward {name!r}; defined: {', '.join(config.rewards.define)}")
    episodes = parsed.episodes or [pair_episode(p.prompt, p.completion, p.expected) for p in parsed.pairs or []]
    running = [i for i, episode in enumerate(episodes) if episode.status.value == "running"]
    if running:
        return 422, _error_body(f"episodes.{running[0]}: still running; a run is scored once it has finished")
    results = online_rewards(episodes, name, config, cases)
    answer: dict[str, Any] = {"reward": name, "rewards": [result.value for result in results]}
    if parsed.breakdown:
        answer["breakdowns"] = [result.breakdown for result in results]
    return 200, jsonout.dumps(answer).encode()


async def _freeze_what_startup_made(app: web.Application) -> None:
    """Move the long-lived objects of startup (modules, config) out of the garbage collector's reach, so its
    full collections walk only a request's garbage: this halves the server's p99 latency."""
    gc.collect()
    gc.freeze()


def reward_app(config: EvalConfig, cases: dict[str, Case]) -> web.Application:
    """The server's application; `config` and `cases` are read once, never written."""

    async def health(request: web.Request) -> web.Response:
        rewards = list(config.rewards.define)
        return web.json_response({"status": "ok", "scorers": list(ONLINE_SCORERS), "rewards": rewards,
                                  "default": config.rewards.default})  # fmt: skip

    async def reward(request: web.Request) -> web.Response:
        if request.content_length is not None and request.content_length > MAX_BODY:
            return _error(413, f"body of {request.content_length} bytes is over the limit of {MAX_BODY}")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return _error(413, f"body is over the limit of {MAX_BODY} bytes")
        status, answer = await asyncio.to_thread(_answer, body, config, cases)
        return web.Response(body=answer, status=status, content_type="application/json")

    app = web.Application(client_max_size=MAX_BODY)
    app.on_startup.append(_freeze_what_startup_made)
    app.router.add_get("/health", health)
    app.router.add_post("/reward", reward)
    return app
