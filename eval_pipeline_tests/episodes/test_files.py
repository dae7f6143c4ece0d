import json
from datetime import date

import pytest

from eval_pipeline.episodes import files
from eval_pipeline.episodes.files import FileSource, iter_file_records


def episode(episode_id: str, started_at: str) -> dict:
    return {"episode_id": episode_id, "agent_id": "a", "status": "success", "started_at": started_at, "steps": []}


def test_jsonl_lines_keep_their_numbers_and_skip_blanks(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"a": 1}\n\n{"broken": \n{"b": 2}\r\n')
    assert [(r.line, r.raw) for r in iter_file_records(path)] == [(1, '{"a": 1}'), (3, '{"broken": '), (4, '{"b": 2}')]


def test_json_arrays_stream_elements_with_their_starting_line(tmp_path):
    path = tmp_path / "a.json"
    items = [episode(f"ep-{i}", "2026-11-01T00:00:00Z") | {"padding": "x" * 400_000} for i in range(6)]
    path.write_text(json.dumps(items, indent=2))  # several MB: crosses the reader's 1 MiB chunks
    records = list(iter_file_records(path))
    assert [json.loads(r.raw)["episode_id"] for r in records] == [f"ep-{i}" for i in range(6)]
    assert records[0].line == 2


def test_a_broken_array_keeps_what_came_before(tmp_path):
    path = tmp_path / "a.json"
    path.write_text('[{"a": 1},\n {"b": 2,,},\n {"c": 3}]')
    records = list(iter_file_records(path))
    assert records[0].raw == '{"a": 1}'
    assert records[1].line == 2 and records[1].raw.startswith('{"b"')
    assert len(records) == 2


def test_index_knows_which_files_hold_which_days_and_rescans_only_changes(tmp_path, monkeypatch):
    source_dir = tmp_path / "episodes"
    source_dir.mkdir()
    day1, day2 = source_dir / "d1.jsonl", source_dir / "d2.jsonl"
    day1.write_text(json.dumps(episode("e1", "2026-11-01T10:00:00Z")) + "\n")
    day2.write_text(json.dumps(episode("e2", "2026-11-02T10:00:00Z")) + "\nnot json\n")
    source = FileSource(source_dir, tmp_path / "index.json")
    index = source.refresh_index(today=date(2026, 11, 20))
    assert index.files[str(day1)].days == {date(2026, 11, 1): 1}
    assert index.files[str(day2)].fallback_day == date(2026, 11, 2)  # the broken line goes with its file's day
    assert [r.locator for r in source.records_for(date(2026, 11, 2))] == [f"{day2}:1", f"{day2}:2"]

    # unchanged files are not read again
    read = []
    monkeypatch.setattr(files, "iter_file_records", lambda path: read.append(path) or iter_file_records(path))
    again = source.refresh_index(today=date(2026, 11, 21))
    assert read == [] and again.files[str(day1)].first_seen == date(2026, 11, 20)

    day1.write_text(day1.read_text() + json.dumps(episode("e3", "2026-11-03T10:00:00Z")) + "\n")
    assert set(source.refresh_index().files[str(day1)].days) == {date(2026, 11, 1), date(2026, 11, 3)}
    assert read == [day1]
    assert [r.locator for r in source.records_for(date(2026, 11, 3))] == [f"{day1}:1", f"{day1}:2"]


def test_a_missing_directory_holds_no_episodes_only_where_it_is_not_required(tmp_path):
    missing = tmp_path / "episodes"
    optional = FileSource(missing, tmp_path / "index.json", required=False)  # beside a case set
    assert list(optional.records_for(date(2026, 11, 5))) == []
    with pytest.raises(files.UnreadableSource, match="does not exist"):
        list(FileSource(missing, tmp_path / "index.json").records_for(date(2026, 11, 5)))
