"""Episode files: a directory or file of JSONL, JSON arrays, indented JSON or log lines, streamed record by record.

Every file of the source is read by its content, whatever it is called; one of no known format is one
quarantined record saying so, never silently skipped.

A night's run must not re-read a year of files to find one day, so the source keeps an index
(file -> modification time, size, days it holds, day first seen) and rescans only files that
changed. The index lives beside the warehouse, not in the source, which may be read-only.
"""

from __future__ import annotations

import codecs
import gzip
import io
import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from fnmatch import fnmatch
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock
from pydantic import BaseModel

from eval_pipeline.durable import replace_whole
from eval_pipeline.episodes.adapters import ADAPTERS, CANONICAL, Adapter, detect_format
from eval_pipeline.episodes.adapters.base import priced
from eval_pipeline.episodes.records import (
    STARTED_AT_BYTES,
    SURROGATES,
    RawRecord,
    RawRecords,
    RecordLines,
    latest_day,
    record_days,
    started_day,
    unpaired_surrogate,
)
from eval_pipeline.errors import InfrastructureError

if TYPE_CHECKING:
    import pyarrow as pa

EPISODE_FILE_SUFFIXES = (".jsonl", ".ndjson", ".json")  # read as canonical episodes even when their first record is bad
INDEX_VERSION = 3  # raised when the days of a format are read differently: every file's days are read again
_CHUNK = 1 << 20
_BLOCK = 1 << 24  # bytes of a file of lines whose days are read at a time (`line_days`)
_SAMPLE_CHARS = 2000  # of a file of no known format, what its quarantine row keeps
_GZIP_MAGIC = b"\x1f\x8b"


class UnreadableSource(InfrastructureError):
    """The episode source path is missing or unreadable."""


# The bytes of a text that were no UTF-8, as `surrogateescape` keeps them in a str
_NOT_DECODED = re.compile("[\udc80-\udcff]")


_READ_AS = "(text is read as UTF-8, or UTF-16 with its byte-order mark)"


def undecodable(data: bytes) -> str | None:
    """Why a record's bytes are no text (None when they are UTF-8): a file written in another encoding (Python on
    Windows writes its ANSI code page, cp1252, unless told otherwise) is quarantined record by record, not read with its
    letters replaced. So is a record holding half of a UTF-16 surrogate pair (`_unpaired_kept`)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        unpaired = _surrogate(data, exc.start)
        if unpaired is not None:
            characters = len(data[: exc.start].decode("utf-8"))
            return (
                f"not text: half of a UTF-16 surrogate pair, U+{unpaired:04X}, alone at character {characters} of "
                f"the record {_READ_AS}"
            )
        return f"not UTF-8: byte 0x{data[exc.start]:02x} at byte {exc.start} of the record {_READ_AS}"
    return None


def _surrogate(data: bytes, at: int) -> int | None:
    """The surrogate whose code point is written as UTF-8 at `at` (three bytes, the first 0xED), if one is."""
    try:
        found = data[at : at + 3].decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None
    return ord(found) if len(found) == 1 and ord(found) in SURROGATES else None


@dataclass(frozen=True, slots=True)
class FileRecord:
    line: int  # 1-based line where the record starts
    raw: str  # bytes that are no UTF-8 replaced (U+FFFD)
    undecodable: str | None = None  # why, when some are: the record is quarantined with it


def _decoded(record: FileRecord) -> FileRecord:
    """`record` as read with `surrogateescape`: its bytes that are no UTF-8 replaced, and said so."""
    if not _NOT_DECODED.search(record.raw):
        return record
    data = record.raw.encode("utf-8", "surrogateescape")
    return FileRecord(record.line, data.decode("utf-8", "replace"), undecodable(data))


class _Inflated(gzip.GzipFile):
    """A gzip file whose damage (cut short, corrupt) is an unreadable file naming it, not an error naming none."""

    def read(self, size: int | None = -1) -> bytes:
        return self._naming_damage(super().read, size)

    def read1(self, size: int = -1) -> bytes:
        return self._naming_damage(super().read1, size)

    def _naming_damage(self, read: Callable[[int], bytes], size: int | None) -> bytes:
        try:
            return read(-1 if size is None else size)
        except (EOFError, gzip.BadGzipFile) as exc:
            raise UnreadableSource(f"episode file {self.name} is damaged gzip: {exc}") from None


def _unpaired_kept(error: UnicodeError) -> tuple[str, int]:
    """How UTF-16 is decoded where it is not UTF-16: half of a surrogate pair alone (a string cut between the two, as
    JavaScript's `slice` cuts one, then written as `utf16le`) is kept, and so is written to UTF-8 as bytes no UTF-8
    decoder accepts: its record is quarantined naming it (`undecodable`), never read with U+FFFD in its place. A file
    cut within a code unit ends in U+FFFD: its last record is cut short anyway."""
    if not isinstance(error, UnicodeDecodeError):
        raise error
    unit = error.object[error.start : error.start + 2]
    code = int.from_bytes(unit, "little" if error.encoding.endswith("le") else "big")
    if len(unit) == 2 and code in SURROGATES:
        return chr(code), error.start + 2
    return "\ufffd", error.end


codecs.register_error("eval_pipeline.unpaired_kept", _unpaired_kept)


class _Utf8(io.RawIOBase):
    """UTF-16 text (as Windows PowerShell's `>` and `Out-File` write it) read as UTF-8 bytes, decoded as it is read;
    it rewinds to its start only, all `iter_file_records` asks."""

    def __init__(self, path: Path):
        self.source = path.open("rb")
        # its byte-order mark tells the order
        self.decoder = codecs.getincrementaldecoder("utf-16")(errors="eval_pipeline.unpaired_kept")
        self.pending = b""

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if (offset, whence) != (0, io.SEEK_SET):
            raise io.UnsupportedOperation("a UTF-16 file is read from its start only")
        self.source.seek(0)
        self.decoder.reset()
        self.pending = b""
        return 0

    def readinto(self, buffer: Any) -> int:
        while not self.pending:
            data = self.source.read(_CHUNK)
            self.pending = self.decoder.decode(data, final=not data).encode("utf-8", "surrogatepass")
            if not data:
                break
        size = min(len(buffer), len(self.pending))
        buffer[:size], self.pending = self.pending[:size], self.pending[size:]
        return size

    def close(self) -> None:
        self.source.close()
        super().close()


def _bytes(path: Path) -> gzip.GzipFile | io.BufferedReader:
    """The file's bytes as UTF-8, inflated when it is gzip (`results.jsonl.gz`, a rotated `event.txt.1.gz`), decoded
    when it is UTF-16 with its byte-order mark: told by its first bytes, as every format is told by content."""
    with path.open("rb") as head:
        opening = head.read(len(_GZIP_MAGIC))
    if opening == _GZIP_MAGIC:
        return _Inflated(path, "rb")
    return io.BufferedReader(_Utf8(path)) if opening in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) else path.open("rb")


# What a rotation appends to a log's name: a number (logging's RotatingFileHandler, logrotate), the day and time
# (TimedRotatingFileHandler: `.2026-11-05`, `.2026-11-05_09-00-00`) or logrotate's `dateext` (`-20261105`, `-2026110509`)
_ROTATED = re.compile(r"(\.\d+|\.\d{4}-\d{2}-\d{2}(_\d{2}(-\d{2}){0,2})?|-\d{8}(\d{2})?)$")


def logged_name(path: Path) -> Path:
    """`event.txt` for `event.txt.1`, `event.txt.2026-11-05`, `event.txt-20261105` or `event.txt.1.gz`: the name the
    file was written under, before a rotation renamed or compressed it. It says what its records are and whose."""
    name = path.name.removesuffix(".gz") or path.name
    return path.with_name(_ROTATED.sub("", name) or name)


def _opened(path: Path) -> io.TextIOWrapper:
    """The file as text; a byte-order mark is no record, and a byte that is no UTF-8 is kept to be told (`_decoded`)."""
    return io.TextIOWrapper(_bytes(path), encoding="utf-8-sig", errors="surrogateescape")


def file_layout(path: Path) -> str:
    """How the file's records are laid out (`_layout`)."""
    with _opened(path) as handle:
        return _layout(handle)


def iter_file_records(path: Path) -> Iterator[FileRecord]:
    """Yield each record's raw text with its line; JSONL, JSON arrays and indented JSON are told apart by content. A
    record with bytes that are no UTF-8 says so (`FileRecord.undecodable`)."""
    with _opened(path) as handle:
        layout = _layout(handle)
        handle.seek(0)
        if layout != "lines":
            yield from map(_decoded, _iter_values(handle, in_array=layout == "array"))
            return
        for line_no, text in enumerate(handle, 1):
            if text.strip():
                yield _decoded(FileRecord(line_no, text.rstrip("\r\n")))


def _whole_lines(path: Path) -> Iterator[bytearray]:
    """A file of lines a block at a time, each cut after its last line end, every line end made a newline as
    `iter_file_records` reads them (`\r\n` and a lone `\r` too), a byte-order mark dropped; only the last block's last
    line may have no end. Each block is read in behind the line the last one cut, not copied behind it."""
    with _bytes(path) as handle:
        cut = b""  # the start of the line the last block ended in
        opening = True  # a byte-order mark may still come
        while True:
            data = bytearray(len(cut) + _BLOCK)
            data[: len(cut)] = cut
            size = len(cut) + handle.readinto(memoryview(data)[len(cut) :])
            ended = size == len(cut)
            del data[size:]
            if opening and (len(data) >= len(codecs.BOM_UTF8) or ended):  # a mark's first bytes hold no line end
                opening = False
                if data.startswith(codecs.BOM_UTF8):
                    del data[: len(codecs.BOM_UTF8)]
            held = b""
            if b"\r" in data:  # a last carriage return may be the start of the next block's `\r\n`
                held = b"\r" if data.endswith(b"\r") and not ended else b""
                data = bytearray(data[: len(data) - len(held)].replace(b"\r\n", b"\n").replace(b"\r", b"\n"))
            last = len(data) if ended else data.rfind(b"\n") + 1
            cut = bytes(data[last:]) + held
            del data[last:]
            if data:
                yield data
            if ended:
                return


def line_records(path: Path) -> Iterator[tuple[pa.Array, pa.Array, pa.Array | None]]:
    """The records of a file of one per line as `iter_file_records` reads them (blank lines skipped), a block at a
    time (`_whole_lines`) as Arrow arrays: each record's line (int64), its text (string) and, in a block with bytes
    that are no UTF-8, why each record with some is none (string, null for the others; None in a block of text).
    Arrow splits a block into its lines and checks them, releasing the GIL; no line becomes a Python string."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    def texts(data: bytes | memoryview) -> tuple[pa.Array, pa.Array | None]:
        whole = pa.Array.from_buffers(
            pa.large_binary(), 1, [None, pa.py_buffer(np.array([0, len(data)], np.int64)), pa.py_buffer(data)]
        )
        lines = pc.split_pattern(whole, "\n").values
        try:
            return lines.cast(pa.string()), None
        except pa.ArrowInvalid:  # some bytes are no UTF-8: told line by line
            raws = lines.to_pylist()
            decoded = pa.array([raw.decode("utf-8", "replace") for raw in raws], pa.string())
            return decoded, pa.array([undecodable(raw) for raw in raws], pa.string())

    before = 0  # lines before the block
    for block in _whole_lines(path):
        lines, rejected = texts(memoryview(block)[: len(block) - block.endswith(b"\n")])
        numbers = pa.array(np.arange(before + 1, before + 1 + len(lines)), pa.int64())
        before += len(lines)
        blank = pc.or_(pc.equal(pc.binary_length(lines), 0), pc.utf8_is_space(lines))
        if pc.any(blank).as_py():
            kept = pc.invert(blank)
            numbers, lines = numbers.filter(kept), lines.filter(kept)
            rejected = None if rejected is None else rejected.filter(kept)
        if len(lines):
            yield numbers, lines, rejected


def line_days(path: Path) -> Counter[date]:
    """Records per UTC day of a file of one record per line (JSONL), as `record_days` of each line counts them, a block
    at a time (`_whole_lines`): one regex scan of a block finds the `started_at` of all its records, and no line becomes
    a Python string (the benchmark's 100,000 episodes, 261 MB: 0.45-0.51 s against 0.63-0.65 s line by line). A day
    named twice in one record counts once."""
    days: Counter[date] = Counter()
    latest = latest_day()
    for block in _whole_lines(path):
        named = {  # (where the record begins, a day it names): each day once per record
            (block.rfind(b"\n", 0, match.start()), day)
            for match in STARTED_AT_BYTES.finditer(block)
            if (day := started_day(match.group(1).decode("utf-8", "replace"), latest)) is not None
        }
        days.update(day for _, day in named)
    return days


_RECORD_LINE = re.compile(rb"(?m)^[ \t\r]*[^\s]")  # a line that is not blank


def _appended_dated_lines(path: Path, before: dict[date, int], after: dict[date, int], size_before: int) -> bool:
    """Whether the file of episode lines only gained whole lines past `size_before`, each a record of a day: it ended
    in a line end there and does now (no record torn then or now), and holds one more dated record per line it
    gained (a line of no day goes to the file's fallback day). Then its other days' records are as they were."""
    if size_before == 0 or path.suffix == ".gz":
        return False
    with path.open("rb") as handle:
        handle.seek(size_before - 1)
        added = handle.read()
    if len(added) < 2 or not (added.startswith(b"\n") and added.endswith(b"\n")):  # it grew, by whole lines
        return False
    return sum(after.values()) - sum(before.values()) == len(_RECORD_LINE.findall(added, 1))


def _layout(handle) -> str:
    """How records are laid out: as an `array` (`[{...}, ...]`), as `documents` (JSON objects written with an
    indent: the first one spans lines, whether its opening line is a lone `{` or `{ "key": ...,`), or as `lines`
    (JSONL, and log lines, `[2026-11-05 10:00:00] ...` too). A first line that is broken JSON leaves the file
    JSONL, so it loses that line alone."""
    head = handle.read(_CHUNK)
    if "".join(head[:4096].split())[:2] in ("[{", "[]"):
        return "array"
    text = head.lstrip()
    first_line = text.split("\n", 1)[0]
    if not text.startswith("{") or _is_json(first_line):
        return "lines"
    if first_line.strip() == "{":
        return "documents"
    try:
        _, end = json.JSONDecoder().raw_decode(text)
    except (ValueError, RecursionError):
        return "lines"
    return "documents" if "\n" in text[:end] else "lines"


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _iter_values(handle, in_array: bool) -> Iterator[FileRecord]:
    """Stream the elements of a top-level JSON array, or JSON documents one after another, without loading
    the file whole. What follows an array's end is read too: the next array's elements (arrays appended day after
    day), or documents.

    Each element's original text is kept (sliced, not re-serialized). A syntax error makes the
    rest of the file one invalid record, since nothing after it can be trusted to resync.
    """
    decoder = json.JSONDecoder()
    buffer, eof = handle.read(_CHUNK), False
    pos = buffer.index("[") + 1 if in_array else 0
    line = 1 + buffer.count("\n", 0, pos)
    inside = in_array  # within an array, whose `]` ends it
    while True:
        while True:  # skip separators, reading more when the buffer runs dry
            while pos < len(buffer) and buffer[pos] in " \t\r\n,":
                line += buffer[pos] == "\n"
                pos += 1
            if pos < len(buffer) or eof:
                break
            buffer, pos = handle.read(_CHUNK), 0
            eof = not buffer
        if pos >= len(buffer):
            return
        if (buffer[pos] == "]" and inside) or (buffer[pos] == "[" and in_array and not inside):
            inside = not inside
            pos += 1
            continue
        try:
            _, end = decoder.raw_decode(buffer, pos)
        except json.JSONDecodeError:
            more = "" if eof else handle.read(_CHUNK)
            if more:
                buffer = buffer[pos:] + more
                pos = 0
                continue
            yield FileRecord(line, buffer[pos:])
            return
        raw = buffer[pos:end]
        yield FileRecord(line, raw)
        line += raw.count("\n")
        pos = end


class IndexedFile(BaseModel):
    mtime_ns: int
    size: int
    file_id: str | None = None  # `st_dev:st_ino`: the same file under a new name (a rotated log) keeps its entry
    days: dict[date, int]  # records per UTC day of started_at
    first_seen: date
    read_on: date | None = None  # a file of no dated record: the day the first run that read it put it on
    # per day, the file's `mtime_ns:size` when that day's records last changed: a file of episode lines that only
    # gained whole dated lines (a log appended to) keeps it for the days that gained none, so the new-episodes sensor
    # leaves them be
    changed: dict[date, str] = {}

    def day_changed(self, day: date) -> str:
        return self.changed.get(day, f"{self.mtime_ns}:{self.size}")

    @property
    def fallback_day(self) -> date:
        """Where a record whose day can't be read goes: the file's main day, else the day a run first read it on,
        else when first seen."""
        if self.days:
            return max(self.days, key=lambda d: (self.days[d], -d.toordinal()))
        return self.read_on or self.first_seen


class FileIndex(BaseModel):
    source: str
    version: int = 1
    adapters: list[str] = []  # the formats the days were read with: a plug-in added later reads every file again
    files: dict[str, IndexedFile] = {}


class FileSource:
    """Episodes in local files. `root` is a directory (searched recursively) or one file; when it is not
    `required` (a case set's runs are episodes enough), a missing root holds no episodes."""

    def __init__(
        self,
        root: Path,
        index_path: Path,
        transcript_agent_id: str | None = None,
        formats: dict[str, str] | None = None,
        trace_quiet_seconds: float = 300.0,
        prices: dict | None = None,
        required: bool = True,
        agents: dict[str, str] | None = None,
        adapters: tuple[Adapter, ...] = ADAPTERS,
    ):
        self.root = root
        self.index_path = index_path
        self.transcript_agent_id = transcript_agent_id  # agent of adapted records that name none; None: each file's name
        self.formats = formats or {}  # glob (relative to the source) -> format name, over detection
        self.trace_quiet_seconds = trace_quiet_seconds  # a trace without its root waits this long for more spans
        self.prices = prices or {}  # by model: adapted episodes' steps are costed from their token split
        self.required = required
        self.agents = agents or {}  # glob (relative to the source) -> agent of the records that name none, over the above
        self.adapters = adapters  # asked in order which reads a file (plug-ins, then the built-in ones)

    def _configured(self, path: Path, table: dict[str, str]) -> str | None:
        """What the first glob of `table` the file matches (relative to the source), or the name it was logged under
        matches (`logged_name`: a glob for `event.txt` holds for `event.txt.1`), names, if any."""
        relative = path.relative_to(self.root) if self.root.is_dir() else Path(path.name)
        names = (relative, logged_name(relative))
        return next(
            (named for pattern, named in table.items() if any(n.match(pattern) or fnmatch(str(n), pattern) for n in names)),
            None,
        )

    def named_format(self, path: Path) -> str | None:
        return self._configured(path, self.formats)

    def _configured_agent(self, path: Path) -> str | None:
        """The agent configured for the file's records that name none: for it, else for all."""
        return self._configured(path, self.agents) or self.transcript_agent_id

    def agent_for(self, path: Path) -> str:
        """The agent of the file's records that name none: configured, else the file's name."""
        return self._configured_agent(path) or logged_name(path).stem

    def adapter_for(self, path: Path, first_raw: str) -> Adapter | None:
        """The file's adapter: the first configured glob it matches, else detected from its first record."""
        name = self.named_format(path)
        if name is None:
            return detect_format(first_raw, self.adapters)
        by_name = {adapter.NAME: adapter for adapter in self.adapters}
        if name != CANONICAL and name not in by_name:
            raise UnreadableSource(f"[sources] formats names unknown format {name!r}; known: {sorted(by_name)}")
        return by_name.get(name)

    def episode_files(self) -> list[Path]:
        if self.root.is_file():
            return [self.root]
        if not self.root.exists() and not self.required:
            return []
        if not self.root.is_dir():
            raise UnreadableSource(f"episode source {self.root} does not exist")
        return sorted(
            p
            for p in self.root.rglob("*")
            if p.is_file() and p.suffix != ".lock" and not any(part.startswith(".") for part in p.relative_to(self.root).parts)
        )  # hidden files and the locks writers keep beside files are no records

    def refresh_index(self, today: date | None = None) -> FileIndex:
        """Rescan only files whose size or modification time changed; drop files that vanished."""
        today = today or datetime.now(UTC).date()
        self.index_path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(f"{self.index_path}.lock", timeout=60):
            index = self._read_index()
            fresh: dict[str, IndexedFile] = {}
            current = index.version == INDEX_VERSION and index.adapters == [adapter.NAME for adapter in self.adapters]
            renamed = {(entry.file_id, entry.mtime_ns, entry.size): entry for entry in index.files.values() if entry.file_id}
            for path in self.episode_files():
                stat = path.stat()
                file_id = f"{stat.st_dev}:{stat.st_ino}"
                known = index.files.get(str(path))
                if known and known.file_id not in (None, file_id):
                    known = None  # a new file under the name (a log rolled over): the old one is under its new name
                # a file renamed and unchanged (rotated) is the file it was: its days, and when each last changed
                known = known or renamed.get((file_id, stat.st_mtime_ns, stat.st_size))
                if known and current and (known.mtime_ns, known.size) == (stat.st_mtime_ns, stat.st_size):
                    fresh[str(path)] = known.model_copy(update={"file_id": file_id})
                    continue
                first_seen, read_on = (known.first_seen, known.read_on) if known else (today, None)
                counted, by_lines = self._days(path)
                days, stamp = dict(counted), f"{stat.st_mtime_ns}:{stat.st_size}"
                appended = bool(known and current and by_lines and _appended_dated_lines(path, known.days, days, known.size))
                fresh[str(path)] = IndexedFile(
                    mtime_ns=stat.st_mtime_ns,
                    size=stat.st_size,
                    file_id=file_id,
                    days=days,
                    first_seen=first_seen,
                    read_on=read_on,
                    changed={
                        day: known.day_changed(day) if known and appended and known.days.get(day) == count else stamp
                        for day, count in days.items()
                    },
                )
            names = [adapter.NAME for adapter in self.adapters]
            index = FileIndex(source=str(self.root), version=INDEX_VERSION, adapters=names, files=fresh)
            replace_whole(self.index_path, index.model_dump_json())
        return index

    def _days(self, path: Path) -> tuple[Counter[date], bool]:
        """Records per UTC day of the file: of each record as its adapter reads days, or a file of episode lines in
        blocks (`line_days`); and whether it was the latter."""
        records = iter_file_records(path)
        first = next(records, None)
        if first is None:
            return Counter(), False
        adapter = self.adapter_for(path, first.raw)
        if adapter is None and file_layout(path) == "lines":
            return line_days(path), True
        reader = getattr(adapter, "days", record_days) if adapter else record_days
        days: Counter[date] = Counter()
        for record in chain([first], records):
            days.update(reader(record.raw))
        return days, False

    def _read_index(self) -> FileIndex:
        try:
            index = FileIndex.model_validate_json(self.index_path.read_text())
        except (OSError, ValueError):
            return FileIndex(source=str(self.root), version=INDEX_VERSION)
        return index if index.source == str(self.root) else FileIndex(source=str(self.root), version=INDEX_VERSION)

    def _canonical(self, path: Path, first_raw: str) -> bool:
        """Read as canonical episodes: named so, called so (a bad first line of a `.jsonl` file loses only
        itself), or opening with JSON."""
        if self.named_format(path) == CANONICAL or logged_name(path).suffix in EPISODE_FILE_SUFFIXES:
            return True
        try:
            json.loads(first_raw)
        except ValueError:
            return False
        return True

    def records_for(self, day: date, undated_day: date | None = None) -> Iterator[RawRecords]:
        """Every record of the files that hold `day` (the warehouse keeps that day's only).

        A file with no dated record (transcripts carry no timestamps) belongs to the day the first run that read it
        put it on, for every later run: `undated_day` when that run named one (`eval-pipeline run --date`), else the
        day it was first seen. Otherwise each night's run would read every earlier night's files again, and a
        backfill of those nights none of them. The files of an adapter that `JOINS_FILES` are converted together,
        after the others: those of one configured agent at once (their records that name no agent are the first
        file's).
        """
        files = self.refresh_index().files
        unread = {name for name, entry in files.items() if not entry.days and entry.read_on is None}
        reading = self._read_on({name for name in unread if (undated_day or files[name].first_seen) == day}, day)
        joined: defaultdict[tuple[Adapter, str | None], list[tuple[Path, date]]] = defaultdict(list)
        for name, entry in files.items():
            if name in reading or (name not in unread and (day in entry.days or entry.fallback_day == day)):
                yield from self._file_records(Path(name), day if name in reading else entry.fallback_day, joined)
        for (adapter, _), joined_files in joined.items():
            records = chain.from_iterable(self._raw_records(path, fallback) for path, fallback in joined_files)
            yield from self._converted(adapter, records, self.agent_for(joined_files[0][0]), joined_files[0][1])

    def _read_on(self, names: set[str], day: date) -> set[str]:
        """Remember that a run reads these files of no dated record on `day`; return those it may read (not put on
        another day by a run meanwhile)."""
        if not names:
            return names
        with FileLock(f"{self.index_path}.lock", timeout=60):
            index = self._read_index()
            for name in names & index.files.keys():
                index.files[name].read_on = index.files[name].read_on or day
            replace_whole(self.index_path, index.model_dump_json())
        return {name for name in names if name in index.files and index.files[name].read_on == day}

    @staticmethod
    def _raw_records(path: Path, fallback: date) -> Generator[RawRecord]:
        """The file's records one by one; one that is no text is rejected here, before an adapter converts it, so that
        its reason names its own field (`unpaired_surrogate`)."""
        return (
            RawRecord(str(path), f"{path}:{r.line}", r.raw, fallback, rejected=r.undecodable or unpaired_surrogate(r.raw))
            for r in iter_file_records(path)
        )

    def _file_records(
        self, path: Path, fallback: date, joined: defaultdict[tuple[Adapter, str | None], list[tuple[Path, date]]]
    ) -> Iterator[RawRecords]:
        """The file's records, canonical or converted; a file of an adapter that `JOINS_FILES` is added to `joined`."""
        records = self._raw_records(path, fallback)
        first = next(records, None)
        if first is None:
            return
        adapter = self.adapter_for(path, first.raw)
        if adapter is not None and getattr(adapter, "JOINS_FILES", False):
            records.close()
            joined[(adapter, self._configured_agent(path))].append((path, fallback))
            return
        both = chain([first], records)
        if adapter is None and not self._canonical(path, first.raw):
            known = ", ".join(sorted(adapter.NAME for adapter in self.adapters))
            reason = f"no known format: the first record is neither an episode nor {known} (name it under [sources] formats)"
            yield replace(first, raw=first.raw[:_SAMPLE_CHARS], rejected=reason)
            return
        if adapter is None and file_layout(path) == "lines":
            records.close()
            yield from (RecordLines(str(path), lines, raws, fallback, rejected) for lines, raws, rejected in line_records(path))
            return
        if adapter is None:
            yield from both
            return
        yield from self._converted(adapter, both, self.agent_for(path), fallback)

    def _converted(self, adapter: Adapter, records: Iterator[RawRecord], agent_id: str, fallback: date) -> Iterator[RawRecord]:
        """What `adapter` makes of `records` (of one file, or of the files it joins), priced; should it fail, one
        quarantine row from the first record on, and the run goes on. A record already rejected (bytes that are no
        UTF-8) is quarantined as it is, never converted."""
        set_aside: list[RawRecord] = []

        def readable() -> Iterator[RawRecord]:
            for record in records:
                if record.rejected is None:
                    yield record
                else:
                    set_aside.append(record)

        readable_records = readable()
        first = next(readable_records, None)
        if first is None:
            yield from set_aside
            return
        converted = adapter.convert(chain([first], readable_records), agent_id, fallback, quiet_seconds=self.trace_quiet_seconds)
        try:
            for record in converted:
                if record.rejected is None and self.prices:
                    record = replace(record, raw=json.dumps(priced(json.loads(record.raw), self.prices)))
                yield record
                yield from set_aside
                set_aside.clear()
        except Exception as exc:  # an adapter's bug or a shape it did not foresee: the file is quarantined, the run goes on
            reason = f"{adapter.NAME} could not read the rest of this file: {type(exc).__name__}: {exc}"
            yield replace(first, locator=f"{first.source} (from the record the adapter stopped at)",
                          raw=first.raw[:_SAMPLE_CHARS], rejected=reason)  # fmt: skip
        yield from set_aside
