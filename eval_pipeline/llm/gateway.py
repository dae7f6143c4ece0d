"""Any OpenAI-compatible endpoint, through the official SDK: bounded concurrency, retries, JSON answers.

The SDK retries 429, 5xx, timeouts and connection errors with exponential backoff and jitter,
honouring Retry-After; this module retries a 200 whose body is not a JSON object the same way, bounds how
many calls are in flight and turns an answer into validated JSON, asking once more when the model's JSON does
not validate.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic import BaseModel, ValidationError

from eval_pipeline.config import Price
from eval_pipeline.redaction import HIDDEN
from eval_pipeline.retry import Backoff

if TYPE_CHECKING:
    from openai import APIError
    from openai.types.chat import ChatCompletionMessageParam

Answer = TypeVar("Answer", bound=BaseModel)


class GatewayError(Exception):
    """A call failed for good (after the SDK's retries); the message never carries the API key."""


class BudgetExhausted(GatewayError):
    """The run's budget (calls or dollars) is spent: what is left is recorded as not done, not attempted."""


@dataclass(frozen=True)
class Tokens:
    prompt: int = 0
    completion: int = 0

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(self.prompt + other.prompt, self.completion + other.completion)

    @property
    def total(self) -> int:
        return self.prompt + self.completion

    def cost(self, price: Price | None) -> float | None:
        """Dollars at `price`; None when the model has no price (unknown is not free)."""
        if price is None:
            return None
        return (self.prompt * price.input_per_million + self.completion * price.output_per_million) / 1e6

    @classmethod
    def of(cls, body: dict) -> Tokens:
        usage = body.get("usage") or {}
        return cls(usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0)


@dataclass
class Usage:
    calls: int = 0
    retried: int = 0  # of them, answered only after a retry (a 429, 5xx, timeout or unreadable body before the answer)
    tokens: Tokens = Tokens()
    cost_usd: float = 0.0  # 0 without a price for the model
    reasks: int = 0
    failures: list[str] = field(default_factory=list)


OPENAI_BASE_URL = "https://api.openai.com/v1"  # where the SDK itself goes when no base URL is given
UNREADABLE_BODY_BACKOFF = Backoff()  # between asking again after a 200 whose body could not be read


@dataclass
class Gateway:
    base_url: str | None  # None: OpenAI's own endpoint
    api_key: str = field(repr=False)  # a secret: never in a repr, log or message
    model: str
    concurrency: int = 16
    max_retries: int = 4
    timeout_seconds: float = 60.0
    max_calls: int | None = None  # the run's call budget; None: unlimited
    max_dollars: float | None = None  # the run's dollar budget, priced by `price`; None: unlimited
    price: Price | None = None
    usage: Usage = field(default_factory=Usage)

    def __post_init__(self) -> None:
        if self.max_dollars is not None and self.price is None:
            raise GatewayError(f"a dollar budget needs a price for {self.model} under [prices] in the config")
        import openai  # 0.7 s to import: paid only by runs that call a model

        self._openai = openai
        # local servers often need no key, but the SDK insists on one
        self._client = openai.AsyncOpenAI(
            base_url=self.base_url or OPENAI_BASE_URL,
            api_key=self.api_key or "unused",
            max_retries=self.max_retries,
            timeout=self.timeout_seconds,
            http_client=openai.DefaultAioHttpClient(),
        )
        self._slots = asyncio.Semaphore(self.concurrency)

    async def close(self) -> None:
        await self._client.close()

    def renewed(self) -> Gateway:
        """This gateway again, for another batch of asks (`ask_all` closes the client it used, with its event loop): a
        new client, the same budget and usage."""
        return replace(self)

    async def _call(self, messages: list[dict[str, str]], schema: type[BaseModel]) -> tuple[str, Tokens]:
        body, _ = await self._send(messages, response_format=_json_schema_format(schema))
        message = self.message(body)
        content, refusal = message.get("content"), message.get("refusal")
        if not content and refusal:  # said in its own field: no malformed JSON to ask again about
            raise GatewayError(f"{self.model} refused: {first_line(str(refusal))}")
        return content or "", Tokens.of(body)

    def message(self, body: dict) -> dict:
        """The answer's message (its first choice's); a GatewayError when it has none (a content filter's null)."""
        try:
            message = body["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            message = None
        if not isinstance(message, dict):
            raise GatewayError(f"{self.model} answered without a message")
        return message

    async def chat(self, messages: list[dict], tools: list[dict]) -> tuple[dict, float]:
        """One assistant turn that may call `tools`: the response body as JSON, and the seconds the answer took."""
        return await self._send(messages, tools=tools or None)

    async def _send(
        self, messages: list[dict], *, response_format: dict | None = None, tools: list[dict] | None = None
    ) -> tuple[dict, float]:
        """One call within the budget and the concurrency bound, and the seconds its answer took (the request that
        was answered: not the wait for a slot, nor retries and their backoff); any API failure becomes a GatewayError."""
        async with self._slots:
            if self.max_calls is not None and self.usage.calls >= self.max_calls:
                raise BudgetExhausted(f"budget of {self.max_calls} calls used up")
            if self.max_dollars is not None and self.usage.cost_usd >= self.max_dollars:
                # spent is known only once answered: calls in flight may overrun by at most `concurrency` calls
                raise BudgetExhausted(f"budget of ${self.max_dollars:g} used up")
            self.usage.calls += 1  # counted when sent, so concurrent calls cannot overrun the budget
            try:
                try:
                    body, seconds, retried = await self._create(messages, response_format, tools)
                except self._openai.BadRequestError:
                    if not response_format or response_format["type"] != "json_schema":
                        raise
                    body, seconds, retried = await self._create(messages, {"type": "json_object"}, tools)  # no json_schema
            except self._openai.APIError as exc:
                raise GatewayError(_describe(exc, self.api_key)) from None
        self.usage.retried += retried
        tokens = Tokens.of(body)
        self.usage.tokens += tokens
        self.usage.cost_usd += tokens.cost(self.price) or 0.0
        return body, seconds

    async def _create(
        self, messages: list[dict], response_format: dict | None, tools: list[dict] | None
    ) -> tuple[dict, float, bool]:
        """One call through the SDK (its retries included), read as plain JSON: building the SDK's
        response objects would cost more CPU than the call itself. A 200 whose body is no JSON object (a proxy
        cut it short) is retried as the SDK retries a 5xx, then a GatewayError: a fault, not a crashed run.
        With the answer, whether it came only after a retry (the SDK's or ours), which the SDK does not say."""
        options: dict[str, Any] = {"response_format": response_format} if response_format else {}
        if tools:
            options["tools"] = tools
        # the messages are plain chat-format dicts (built here or recorded in an episode); the SDK sends them as JSON
        sdk_messages = cast("list[ChatCompletionMessageParam]", messages)
        for attempt in range(self.max_retries + 1):
            if attempt:
                await asyncio.sleep(UNREADABLE_BODY_BACKOFF.delay(attempt - 1))
            raw = await self._client.chat.completions.with_raw_response.create(
                model=self.model, messages=sdk_messages, temperature=0, **options
            )
            try:
                body = json.loads(raw.content)
            except ValueError as exc:
                problem = f"a body that is not JSON ({first_line(exc)})"
                continue
            if isinstance(body, dict):
                return body, raw.elapsed.total_seconds(), bool(attempt or raw.retries_taken)
            problem = "JSON that is not an object"
        raise GatewayError(f"{self.model} answered {problem}, {self.max_retries + 1} times")

    async def structured(self, messages: list[dict[str, str]], schema: type[Answer]) -> tuple[Answer, Tokens]:
        """The answer validated as `schema`, and the tokens it took; one re-ask on invalid JSON, then GatewayError."""
        content, tokens = await self._call(messages, schema)
        try:
            return schema.model_validate(json.loads(content)), tokens
        except (ValueError, ValidationError) as first_error:
            self.usage.reasks += 1
            reask = [
                *messages,
                {"role": "assistant", "content": content},
                {"role": "user", "content": f"That was not valid JSON for the schema ({_wrong(first_error)}). "
                 "Answer again with only the JSON object."},
            ]  # fmt: skip
            content, more = await self._call(reask, schema)
            try:
                return schema.model_validate(json.loads(content)), tokens + more
            except (ValueError, ValidationError) as second_error:
                raise GatewayError(f"invalid JSON from {self.model} twice: {_wrong(second_error)}") from None


@lru_cache(maxsize=64)
def _json_schema_format(schema: type[BaseModel]) -> dict:
    """Built once per schema: generating a JSON Schema costs more CPU than the rest of a call."""
    return {"type": "json_schema", "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema(), "strict": True}}


def first_line(error: Exception | str) -> str:
    """An error (or its text) as one short line, for records and messages."""
    return str(error).splitlines()[0][:200]


MIN_KEY_LENGTH = 8  # a shorter key (a local server's "k") is no secret, and hiding it would garble every message


def _wrong(error: ValueError) -> str:
    """What was wrong with an answer, in one line: each field a validation error names and why, else the JSON error
    (a ValidationError's first line only counts its errors)."""
    if isinstance(error, ValidationError):
        return first_line("; ".join(f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}" for e in error.errors()))
    return first_line(error)


def _describe(error: APIError, api_key: str) -> str:
    """The error in one line, the key hidden before the line is cut (a gateway may quote the key it refused), and
    how many requests the SDK sent before giving up: it numbers each retry in a header of the request."""
    status = getattr(error, "status_code", None)
    text = str(error)
    if len(api_key) >= MIN_KEY_LENGTH:
        text = text.replace(api_key, HIDDEN)
    attempts = int(error.request.headers.get("x-stainless-retry-count", 0)) + 1
    return (
        f"{type(error).__name__}{f' (HTTP {status})' if status else ''}: {first_line(text)} "
        f"({attempts} attempt{'s' if attempts != 1 else ''})"
    )
