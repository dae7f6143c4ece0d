"""A real OpenAI-compatible chat-completions server on 127.0.0.1, deterministic, with injectable faults."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _text(content: str | list[dict]) -> str:
    """A message's content, given as text or as content parts (`[{"type": "text", "text": ...}]`)."""
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


def deterministic_score(response_text: str) -> int:
    """The same answer always gets the same score (1..5)."""
    return 1 + sum(map(ord, response_text)) % 5


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # a burst of 64 new connections must not overflow the listen backlog


class FakeOpenAI:
    def __init__(self) -> None:
        self.latency_seconds = 0.0
        self.fail_next: list[tuple[int, str | None]] = []  # (status, Retry-After) for the next calls
        self.fail_when: Callable[[dict], bool] | None = None  # answer 500 (retry at once) to every request it picks
        self.invalid_json_next = 0  # answer this many calls with prose instead of JSON
        self.reject_json_schema = False  # answer 400 to response_format json_schema, like older servers
        self.rogue_tool: str | None = None  # as a candidate, call this tool (not on offer) first
        self.position_bias = False  # as a pairwise judge, always prefer the answer shown first
        self.score_of: Callable[[str], object] | None = None  # as a rubric judge, the score to answer for a response
        self.refuse_when: Callable[[dict], bool] | None = None  # refuse the requests it picks, as OpenAI's models do
        self.filter_when: Callable[[dict], bool] | None = None  # answer a choice without a message (a content filter)
        self.truncated_next = 0  # answer this many calls 200 with a JSON body cut off midway, as a dropped proxy does
        self.echo_key = False  # answer 401 quoting the request's API key, as some gateways do
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                status, headers, answer = fake._answer(self.path, body, self.headers.get("Authorization"))
                payload = json.dumps(answer).encode()
                with fake._lock:
                    truncated = fake.truncated_next > 0
                    fake.truncated_next -= truncated
                payload = payload[: len(payload) // 2] if truncated else payload
                self.send_response(status)
                for name, value in {**headers, "Content-Type": "application/json", "Content-Length": str(len(payload))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _answer(self, path: str, body: dict, authorization: str | None) -> tuple[int, dict, dict]:
        with self._lock:
            self.requests.append({"path": path, "body": body, "authorization": authorization})
            fault = self.fail_next.pop(0) if self.fail_next else None
            fault = fault or ((500, "0") if self.fail_when and self.fail_when(body) else None)
            prose = self.invalid_json_next > 0
            self.invalid_json_next -= prose
        if self.latency_seconds:
            time.sleep(self.latency_seconds)
        if self.echo_key:
            key = (authorization or "").removeprefix("Bearer ")
            return 401, {}, {"error": {"message": f"Incorrect API key provided: {key}", "type": "invalid_request_error"}}
        if fault:
            status, retry_after = fault
            return (
                status,
                ({"Retry-After": retry_after} if retry_after else {}),
                {"error": {"message": "injected", "type": "server_error"}},
            )
        if self.filter_when and self.filter_when(body):
            choice = {"index": 0, "message": None, "finish_reason": "content_filter"}
            return 200, {}, {"id": "chatcmpl-filtered", "object": "chat.completion", "created": 0, "choices": [choice]}
        if self.refuse_when and self.refuse_when(body):
            refusal = {"role": "assistant", "content": None, "refusal": "I'm sorry, I can't help with that."}
            return 200, {}, {
                "id": "chatcmpl-refusal", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "message": refusal, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
            }  # fmt: skip
        if self.reject_json_schema and body.get("response_format", {}).get("type") == "json_schema":
            return 400, {}, {"error": {"message": "json_schema unsupported", "type": "invalid_request_error"}}
        if body.get("tools"):
            return 200, {}, self._agent_turn(body)
        text = "\n".join(_text(m["content"]) for m in body["messages"])
        content = "I think it is fine." if prose else json.dumps(self._verdict(text))
        return 200, {}, {
            "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        }  # fmt: skip

    def _verdict(self, text: str) -> dict:
        """A rubric verdict (the response's deterministic score), or a pairwise one (the higher score wins)."""
        pair = re.search(r"<response_a>\n(.*)\n</response_a>\n\n<response_b>\n(.*)\n</response_b>", text, re.S)
        if pair:
            first, second = (deterministic_score(answer) for answer in pair.groups())
            winner = "A" if self.position_bias or first > second else "B" if second > first else "tie"
            return {"winner": winner, "reasoning": f"deterministic {first} vs {second}"}
        found = re.search(r"<response>\n(.*)\n</response>", text, re.S)
        response = found.group(1) if found else text
        score = deterministic_score(response)
        return {"score": self.score_of(response) if self.score_of else score, "reasoning": f"deterministic {score}"}

    def _agent_turn(self, body: dict) -> dict:
        """As a candidate agent: call each offered tool once, in order, then answer."""
        offered = [tool["function"]["name"] for tool in body["tools"]]
        done = sum(message["role"] == "tool" for message in body["messages"])
        wanted = self.rogue_tool if self.rogue_tool else (offered[done] if done < len(offered) else None)
        if wanted:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"call_{done}", "type": "function", "function": {"name": wanted, "arguments": "{}"}}],
            }
        else:
            asked = next(m["content"] for m in body["messages"] if m["role"] == "user")
            message = {"role": "assistant", "content": f"Done after {done} tool calls: {asked}"}
        return {
            "id": "chatcmpl-agent", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if wanted else "stop"}],
            "usage": {"prompt_tokens": 200, "completion_tokens": 30, "total_tokens": 230},
        }  # fmt: skip

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
