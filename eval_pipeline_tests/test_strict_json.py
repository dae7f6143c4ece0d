"""Every JSON the product writes parses with a strict parser: undefined and unbounded numbers are null.

Node's `JSON.parse` (and any RFC 8259 parser) rejects NaN and Infinity, which Python's `json` writes.
"""

import json

import pytest

from eval_pipeline.cli import main
from eval_pipeline_tests.air import episode

pytestmark = pytest.mark.slow

BEFORE, AFTER = "2026-11-04", "2026-11-05"


def strict(text: str):
    """Parse as a strict parser does: NaN, Infinity and -Infinity are errors."""

    def reject(constant: str):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=reject)


def strict_lines(text: str) -> list:
    return [strict(line) for line in text.splitlines() if line.strip()]


@pytest.fixture
def two_days(project_env):
    """`steady`: 4 tasks, each 50 % dearer on day 2 (a per-agent finding with no episode); `pricey`: 3 tasks 40, 50 and
    60 % dearer (a bootstrap over 3 tasks has resamples without spread: an unbounded CI)."""
    (project_env / "episodes").mkdir()
    rise = {"steady": [1.5, 1.5, 1.5, 1.5], "pricey": [1.4, 1.5, 1.6]}
    for day, scale in ((BEFORE, None), (AFTER, rise)):
        records = [
            episode(f"{agent}-{day}-{n}", f"{agent}/task-{n}", f"Question {n}?", "lookup", '{"answer": "yes"}', "Yes, it is.",
                    day=day, agent_id=agent, cost=0.01 * (scale[agent][n] if scale else 1.0), reward=1.0)
            for agent, factors in rise.items()
            for n in range(len(factors))
        ]  # fmt: skip
        (project_env / "episodes" / f"{day}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["run", "--start", BEFORE, "--end", AFTER, "--fail-on", "never"]) == 0
    return project_env


def test_every_json_output_parses_strictly(two_days, capsys, tmp_path):
    root = two_days
    capsys.readouterr()
    report = strict((root / "reports" / f"eval-report-{AFTER}.json").read_text())
    aggregate = [
        a for a in report["alerts"] if a["agent_id"] == "steady" and a["dimension"] == "cost_delta" and not a["episode_id"]
    ]
    assert aggregate and aggregate[0]["episode_id"] is None  # a per-agent finding: null, never NaN
    markdown = (root / "reports" / f"eval-report-{AFTER}.md").read_text()
    assert "| steady | (all episodes) |" in markdown and "nan" not in markdown.lower().replace("nanos", "")

    assert main(["compare", "--a", f"date={BEFORE},agent=pricey", "--b", f"date={AFTER},agent=pricey", "--format", "json"]) == 0
    comparison = strict(capsys.readouterr().out)
    cost = comparison["performance"]["cost_delta_pct"]
    assert cost["mean"] == pytest.approx(50.0) and (cost["ci_low"], cost["ci_high"]) == (None, None)  # unbounded: null
    assert main(["compare", "--a", f"date={BEFORE},agent=pricey", "--b", f"date={AFTER},agent=pricey"]) == 0
    compared = capsys.readouterr().out
    assert "CI unbounded to unbounded" in compared and "inf" not in compared

    assert main(["query", "SELECT * FROM findings", "--format", "json"]) == 0
    assert strict(capsys.readouterr().out)
    assert main(["query", "SELECT * FROM scores", "--format", "json"]) == 0
    scores = strict(capsys.readouterr().out)
    assert any(row["weighted_score"] is None for row in scores)  # day 1 has no baseline: null, not NaN
    assert main(["export", "--format", "plaited", "--date", AFTER]) == 0
    assert len(strict_lines(capsys.readouterr().out)) == 7
    assert main(["reward-bench", "--date", AFTER, "--format", "json"]) == 0
    assert strict(capsys.readouterr().out)["episodes"] == 7  # every reward is 1.0: rank statistics are undefined
    assert main(["schemas", "--json"]) == 0
    assert strict(capsys.readouterr().out)
    assert main(["status"]) == 0
    capsys.readouterr()

    alerts = root / "alerts"
    written = [path for path in alerts.rglob("*") if path.suffix in (".json", ".jsonl")]  # not their locks
    assert written and all(strict_lines(path.read_text()) for path in written)
    assert (report["summary"]["passed"], report["summary"]["failed"]) == (1, 6)  # +50 % and +60 % are critical


def test_indented_json_is_the_text_json_writes():
    """Indented output (reports, `run --format json`) is written by orjson: the same text as `json.dumps(indent=2)`, in
    ASCII whatever the agents wrote, and strict; what orjson refuses is written by json."""
    import numpy as np

    from eval_pipeline import jsonout

    every_character = "".join(map(chr, range(0x800))) + "€ 中文 😀 \U0010ffff"
    document = {every_character: [every_character, {"k": every_character}], "empty": [{}, []], "n": [1, -2.5, 1e300]}
    assert jsonout.dumps(document, indented=True) == json.dumps(document, indent=2)
    assert jsonout.dumps(document, indented=True).isascii()
    undefined = {"nan": float("nan"), "inf": np.float64("inf"), "array": np.array([0.5, np.nan])}
    assert strict(jsonout.dumps(undefined, indented=True)) == {"nan": None, "inf": None, "array": [0.5, None]}
    refused = {"past 64 bits": 2**70, "lone surrogate": "\ud800"}
    assert jsonout.dumps(refused, indented=True) == json.dumps(refused, indent=2)
