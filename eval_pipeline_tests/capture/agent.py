"""A small real command agent for the capture tests: it reads its prompt and behaves as the prompt says."""

import json
import os
import sys
import time
from pathlib import Path

prompt = os.environ.get("EVAL_PROMPT") or (sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read())
if os.environ.get("AGENT_DEGRADED"):  # a worse release of the agent: it stops answering
    print("I cannot help with that.")
    sys.exit(0)
if "hang" in prompt:
    time.sleep(60)
if "crash" in prompt:
    print("Traceback (most recent call last):\n  RuntimeError: the agent crashed", file=sys.stderr)
    sys.exit(3)
if "write" in prompt:
    existing = sorted(p.name for p in Path.cwd().iterdir())  # isolated: nothing from other runs
    Path("notes.txt").write_text(prompt)
    print(
        json.dumps(
            {
                "steps": [
                    {"step_index": 0, "step_type": "llm_call", "input_summary": prompt, "output_summary": "writing"},
                    {
                        "step_index": 1,
                        "step_type": "tool_call",
                        "tool_name": "write_file",
                        "input_summary": '{"path": "notes.txt"}',
                    },
                    {
                        "step_index": 2,
                        "step_type": "tool_result",
                        "tool_name": "write_file",
                        "output_summary": json.dumps(existing),
                    },
                ],
                "metadata": {"final_output": f"wrote notes.txt; found {existing}"},
            }
        )
    )
    sys.exit(0)
print(f"echo: {prompt}")  # plain text: the answer
