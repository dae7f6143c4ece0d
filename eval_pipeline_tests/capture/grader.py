"""An executable grader for the tests (plaited protocol): passes when the output contains the hint."""

import json
import sys

run = json.load(sys.stdin)
if run["hint"] == "explode":
    sys.exit("grader crashed on purpose")
found = (run["hint"] or "").lower() in run["output"].lower()
print(
    json.dumps(
        {"pass": found, "score": 1.0 if found else 0.0, "reasoning": f"looked for {run['hint']!r} in cwd {run['cwd'] != ''}"}
    )
)
