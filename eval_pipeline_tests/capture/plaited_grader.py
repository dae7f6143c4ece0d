#!/usr/bin/env python3
"""A grader written for plaited, against its TrajectoryStep shape: it passes when the agent called the tool named
in its one argument, and says with what input."""

import json
import sys

run = json.load(sys.stdin)
wanted = sys.argv[1]
calls = [step for step in run["trajectory"] if step["type"] == "tool_call" and step["name"] == wanted]
print(
    json.dumps(
        {
            "pass": bool(calls),
            "score": 1.0 if calls else 0.0,
            "reasoning": f"{wanted} called with {json.dumps(calls[0]['input'])}" if calls else f"{wanted} never called",
        }
    )
)
