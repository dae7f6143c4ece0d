"""Stand-ins for two headless CLI agents, started as `claude` or `gemini` through a wrapper on PATH.

Each prints the JSON event stream its real counterpart prints with `--output-format stream-json`,
records its argv in the working directory, and keeps a session there, so the tests can check
the flags it was given, session resume and the conversation history it was sent.
"""

import json
import sys
from pathlib import Path

agent, args = sys.argv[1], sys.argv[2:]
calls = sorted(Path.cwd().glob("argv-*.json"))
Path(f"argv-{len(calls)}.json").write_text(json.dumps(args))
print("Loading agent...")  # not JSON: skipped by the adapter


def emit(event: dict) -> None:
    print(json.dumps(event), flush=True)


if agent == "claude":
    prompt = args[args.index("-p") + 1]
    session = Path("session.json")
    if "--resume" in args:
        state = json.loads(session.read_text())
        assert state["id"] == args[args.index("--resume") + 1], "resumed a session that does not exist"
    else:
        state = {"id": f"sess-{len(prompt)}", "prompts": []}
    state["prompts"].append(prompt)
    session.write_text(json.dumps(state))
    emit({"type": "system", "subtype": "init", "session_id": state["id"]})
    if "hang" in prompt:
        import time

        time.sleep(60)
    emit({"type": "assistant", "message": {"content": [{"type": "text", "text": "Checking that."}]}, "session_id": state["id"]})
    if "order" in prompt:
        emit({"type": "tool_use", "name": "lookup_order", "input": {"order_id": "A-1"}})
        emit({"type": "tool_result", "name": "lookup_order", "content": "shipped"})
    answer = "Order A-1 has shipped." if len(state["prompts"]) == 1 else f"You first asked: {state['prompts'][0]}"
    emit({"type": "result", "subtype": "success", "result": answer, "session_id": state["id"]})
else:  # gemini: the prompt is the last (positional) argument; no session of its own
    prompt = args[-1]
    turns = prompt.count("User: ") + (0 if prompt.startswith("User: ") else 1)
    emit({"type": "message", "content": f"I see {turns} turn(s)."})
    emit({"type": "result", "content": f"last line: {prompt.splitlines()[-1]}"})
