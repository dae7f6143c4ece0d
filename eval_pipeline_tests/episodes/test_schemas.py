"""`eval-pipeline schemas`: every format we read, as JSON Schema from the pydantic models."""

import json
from pathlib import Path

from eval_pipeline.cli import main
from eval_pipeline.episodes.schemas import SCHEMAS

HEADLESS = Path(__file__).parents[1] / "capture" / "schemas"


def test_the_list_names_every_schema_and_each_prints_as_json(capsys):
    assert main(["schemas"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == list(SCHEMAS)
    assert {"episode", "case", "case-set", "headless-adapter", "otlp-json", "openai-transcript", "plaited-capture",
            "plaited-trials", "langgraph-event", "autogen-event", "autogen-task-result", "autogen-log-event",
            "langgraph-checkpoint"} <= set(listed)  # fmt: skip
    assert main(["schemas", "headless-adapter"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert set(schema["required"]) == {"version", "name", "command", "sessionMode", "prompt", "output", "result"}
    assert main(["schemas", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == set(SCHEMAS)


def test_an_unknown_schema_is_a_usage_error(capsys):
    assert main(["schemas", "nope"]) == 2
    assert "no schema 'nope'; known: episode" in capsys.readouterr().err


def test_plaited_sample_adapter_schemas_and_a_case_set_line_validate():
    model = SCHEMAS["headless-adapter"][0]
    for path in sorted(HEADLESS.glob("*.json")):
        model.model_validate(json.loads(path.read_text()))
    SCHEMAS["case-set"][0].model_validate({"id": "a", "input": ["hi", "again"], "metadata": {"category": "smalltalk"}})
