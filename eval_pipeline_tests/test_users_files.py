"""Users' own files, written exactly the way their tools write them, through `eval-pipeline run`."""

import gzip
import json

import pytest

from eval_pipeline.cli import main
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline_tests.air import episode
from eval_pipeline_tests.episodes.test_plaited import CAPTURE

pytestmark = pytest.mark.slow

DAY = "2026-11-05"


def rows(root, sql: str):
    with Warehouse(root / "eval.duckdb").connect(read_only=True) as con:
        return con.execute(sql).fetchall()


def test_gzipped_files_load_as_their_tools_compressed_them(project_env, capsys):
    """The store's export archived with gzip (CRLF lines, as written on Windows) and plaited's results.jsonl gzipped."""
    source = project_env / "episodes"
    source.mkdir()
    exported = [episode(f"ep-{n}", f"triage/{n}", f"Where does ticket {n} go?", "route_ticket", "{}", "To billing.")
                for n in range(3)]  # fmt: skip
    lines = "".join(json.dumps(e) + "\r\n" for e in exported)
    (source / "export-2026-11-05.ndjson.gz").write_bytes(gzip.compress(lines.encode()))
    (source / "results.jsonl.gz").write_bytes(gzip.compress((json.dumps(CAPTURE) + "\n").encode()))

    assert main(["run", "--date", DAY, "--fail-on", "never"]) == 0
    assert "4 episodes" in capsys.readouterr().out
    assert rows(project_env, "SELECT episode_id, agent_id FROM episodes ORDER BY 1") == [
        ("ep-0", "triage-bot"), ("ep-1", "triage-bot"), ("ep-2", "triage-bot"), ("results:fix-typo", "results"),
    ]  # fmt: skip  # a plaited file's name is its agent: `results`, as for results.jsonl
    assert rows(project_env, "SELECT count(*) FROM quarantine") == [(0,)]


def test_a_gzip_cut_short_is_an_unreadable_file_naming_itself(project_env, capsys):
    source = project_env / "episodes"
    source.mkdir()
    exported = [episode(f"ep-{n}", f"triage/{n}", f"Ticket {n}?", "route_ticket", "{}", "To billing.") for n in range(300)]
    whole = gzip.compress("".join(json.dumps(e) + "\n" for e in exported).encode())
    (source / "export.jsonl.gz").write_bytes(whole[: len(whole) // 2])  # a download cut off halfway

    assert main(["run", "--date", DAY]) == 3
    error = capsys.readouterr().err.strip()
    assert error.startswith("eval-pipeline: error:") and "\n" not in error
    assert f"{source / 'export.jsonl.gz'} is damaged gzip" in error
