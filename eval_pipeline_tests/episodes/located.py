"""What a source gives, as tests read it."""

from collections.abc import Iterable

from eval_pipeline.episodes.records import RawRecord, RawRecords, RecordLines


def each_record(items: Iterable[RawRecords]) -> list[RawRecord]:
    """Every record a source gave, single or among a file's lines, as the single record it stands for."""
    return [
        record
        for item in items
        for record in (
            [
                RawRecord(item.source, f"{item.source}:{line}", raw, item.fallback_day)
                for line, raw in zip(item.lines.to_pylist(), item.raws.to_pylist(), strict=True)
            ]
            if isinstance(item, RecordLines)
            else [item]
        )
    ]
