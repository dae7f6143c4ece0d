import json
from datetime import date

import pytest

from eval_pipeline.episodes import files
from eval_pipeline.episodes.files import FileSource, iter_file_records, line_days, line_records
from eval_pipeline.episodes.records import record_days
from eval_pipeline_tests.episodes.located import each_record


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
    assert [r.locator for r in each_record(source.records_for(date(2026, 11, 2)))] == [f"{day2}:1", f"{day2}:2"]

    # unchanged files are not read again
    read = []
    monkeypatch.setattr(files, "iter_file_records", lambda path: read.append(path) or iter_file_records(path))
    again = source.refresh_index(today=date(2026, 11, 21))
    assert read == [] and again.files[str(day1)].first_seen == date(2026, 11, 20)

    day1.write_text(day1.read_text() + json.dumps(episode("e3", "2026-11-03T10:00:00Z")) + "\n")
    assert set(source.refresh_index().files[str(day1)].days) == {date(2026, 11, 1), date(2026, 11, 3)}
    assert read == [day1]
    assert [r.locator for r in each_record(source.records_for(date(2026, 11, 3)))] == [f"{day1}:1", f"{day1}:2"]


@pytest.mark.parametrize("block_bytes", [1 << 24, 64, 7])
def test_a_file_of_lines_counts_the_days_of_its_records_in_blocks_as_line_by_line(tmp_path, monkeypatch, block_bytes):
    """Blocks of any size (lines and values cut at their edges), every line end `iter_file_records` knows, a byte-order
    mark, bytes that are no UTF-8, a record naming a day twice or two days (nested), an offset across midnight,
    timestamps that are none or of a broken clock."""
    monkeypatch.setattr(files, "_BLOCK", block_bytes)
    lines = [
        json.dumps(episode("e1", "2026-11-01T10:00:00Z")),
        json.dumps(episode("e2", "2026-11-01T23:30:00-02:00")),  # 2026-11-02 in UTC
        json.dumps(episode("e3", "2026-11-01T10:00:00Z") | {"metadata": {"started_at": "2026-11-01T11:00:00Z"}}),
        json.dumps(episode("e4", "2026-11-03T10:00:00Z") | {"metadata": {"started_at": "2026-10-31"}}),
        json.dumps(episode("e5", "1970-01-01T00:00:00Z")),
        json.dumps(episode("e6", "2026-11-01 10:00 UTC")),
        '{"episode_id": "e7", "started_at" :  "2026-11-04T00:00:00Z", "note": "\\xff"}',
        '{"started_at": "2026-11-05T01:00:00Z", "episode_id": "e8"}',  # its day at its start, wherever a block cuts it
        "",
        "not json at all",
    ]
    path = tmp_path / "day.jsonl"
    text = "\ufeff" + "\r\n".join(lines[:3]) + "\r" + "\n".join(lines[3:]) + "\n"
    path.write_bytes(text.encode().replace(b"\\xff", b"\xff"))
    by_line: dict[date, int] = {}
    for record in iter_file_records(path):
        for day in record_days(record.raw):
            by_line[day] = by_line.get(day, 0) + 1
    assert by_line == {date(2026, 11, 1): 2, date(2026, 11, 2): 1, date(2026, 10, 31): 1, date(2026, 11, 3): 1,
                       date(2026, 11, 4): 1, date(2026, 11, 5): 1}  # fmt: skip
    assert line_days(path) == by_line
    with path.open("ab") as unended:  # the last line without its end
        unended.write(json.dumps(episode("e9", "2026-11-06T00:00:00Z")).encode())
    assert line_days(path) == {**by_line, date(2026, 11, 6): 1}


@pytest.mark.parametrize("block_bytes", [1 << 24, 64, 7, 2, 1])
@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r", ""])
def test_a_file_of_lines_is_read_in_blocks_as_line_by_line(tmp_path, monkeypatch, block_bytes, ending):
    """Every record with its line and text as `iter_file_records` reads them: blocks of any size (lines cut at their
    edges, a byte-order mark too), every line end, blank lines of any whitespace Python strips, bytes that are no
    UTF-8, text past ASCII, the last line ended or not."""
    monkeypatch.setattr(files, "_BLOCK", block_bytes)
    lines = [
        json.dumps(episode("e1", "2026-11-01T10:00:00Z")),
        "",
        "   \t ",
        json.dumps(episode("e2", "2026-11-01T10:00:00Z") | {"note": "caf\u00e9 \u6f22\u5b57 \U0001f600"}, ensure_ascii=False),
        "\x1c\x85\u3000\u2028",
        r'{"episode_id": "e3", "note": "\xff"}',  # the byte 0xff (`write_bytes` below)
        ' {"episode_id": "e4"}\t',
        "not json at all",
    ]
    path = tmp_path / "day.jsonl"
    text = "\ufeff" + "\r\n".join(lines[:2]) + "\r" + "\n".join(lines[2:]) + ending
    path.write_bytes(text.encode().replace(b"\\xff", b"\xff"))
    expected = [(record.line, record.raw, record.undecodable) for record in iter_file_records(path)]
    assert len(expected) == 5  # the blank lines skipped
    assert [reason is not None for _, _, reason in expected] == [False, False, True, False, False]  # the byte 0xff
    read = [
        read
        for numbers, raws, rejected in line_records(path)
        for read in zip(
            numbers.to_pylist(), raws.to_pylist(), [None] * len(raws) if rejected is None else rejected.to_pylist(), strict=True
        )
    ]
    assert read == expected


def test_files_of_nothing_or_blank_lines_hold_no_records(tmp_path):
    for name, content in {"empty": b"", "mark": b"\xef\xbb\xbf", "blank": b"\n\r\n  \n\t"}.items():
        (path := tmp_path / f"{name}.jsonl").write_bytes(content)
        assert list(line_records(path)) == [] and list(iter_file_records(path)) == []


def test_a_missing_directory_holds_no_episodes_only_where_it_is_not_required(tmp_path):
    missing = tmp_path / "episodes"
    optional = FileSource(missing, tmp_path / "index.json", required=False)  # beside a case set
    assert list(optional.records_for(date(2026, 11, 5))) == []
    with pytest.raises(files.UnreadableSource, match="does not exist"):
        list(FileSource(missing, tmp_path / "index.json").records_for(date(2026, 11, 5)))
