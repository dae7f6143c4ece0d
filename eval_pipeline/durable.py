"""Writing files so that a full disk or a crash leaves them readable, and an I/O error says which file it hit.

Files the pipeline only ever appends lines to (the alert ledger, the collector's day files, alerts without
a webhook) take each line whole or not at all. A line half-written (a full disk, a crash mid-write) would
be glued to the next line appended, and a reader that parses every line would stop at it for good. So
every append goes through `append_lines`: under the file's lock, a torn tail an earlier crash left is
first set aside (truncated off, its bytes kept in a hidden `.NAME.torn` beside the file and logged, so
nothing vanishes unseen and the episode source does not read them); the lines then go in one write,
fsynced; a write that fails is cut back off before the error is raised. Readers that must not trip over
a tail being written use `complete_lines`.

Files rewritten whole (the outbox's batches, the source index, captures) go through `replace_whole`.

An OSError from a write carries no file name ("[Errno 28] No space left on device"); `naming` adds it.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock

log = logging.getLogger(__name__)
LOCK_TIMEOUT_SECONDS = 30.0
_BLOCK = 64 * 1024  # read back from the end a block at a time to find the last newline


def torn_path(path: Path) -> Path:
    """Where the torn tails set aside from `path` are kept (hidden: the episode source skips hidden files)."""
    return path.with_name(f".{path.name}.torn")


@contextmanager
def naming(path: Path) -> Iterator[None]:
    """An OSError in the block that names no file is raised again naming `path`."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None or exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror, str(path)) from None


def replace_whole(path: Path, text: str | Iterable[str]) -> None:
    """`path` now holds `text` (or its pieces, written as they come: an export of a day), or (on an error, which
    names the file when it is one of writing) what it held before: written beside it under a hidden name first,
    removed again when that fails, moved into place when it did not."""
    aside = path.with_name(f".{path.name}.partial")
    try:
        with naming(path), aside.open("w", encoding="utf-8") as out:
            for piece in [text] if isinstance(text, str) else text:
                out.write(piece)
    except BaseException as exc:  # a write, or the pieces' maker (an export's query): nothing is left beside the file
        aside.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename == str(aside):  # name the file asked for (a directory missing)
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        raise
    os.replace(aside, path)


def append_lines(path: Path, lines: Iterable[str]) -> None:
    """Append `lines` (each ending in a newline) whole or not at all; OSError naming `path` when it cannot."""
    data = "".join(lines).encode("utf-8")
    if not data.endswith(b"\n"):
        raise ValueError(f"lines appended to {path} must end in a newline")
    with FileLock(f"{path}.lock", timeout=LOCK_TIMEOUT_SECONDS):
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            whole = _set_aside_torn_tail(path, fd)
            try:
                with naming(path):
                    _write(fd, data)
                    os.fsync(fd)
            except OSError:
                with contextlib.suppress(OSError):  # if this fails too, the next append sets the tail aside
                    os.ftruncate(fd, whole)
                raise
        finally:
            os.close(fd)


def complete_lines(path: Path) -> Iterator[str]:
    """The file's lines that end in a newline; a torn last line (a crash mid-append) is left for the next append."""
    if not path.exists():
        return
    with path.open(encoding="utf-8", errors="replace", newline="\n") as handle:
        for line in handle:
            if line.endswith("\n"):
                yield line


def _write(fd: int, data: bytes) -> None:
    """One write; a short one (the disk filled mid-line) goes on, so the next write raises the reason."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _set_aside_torn_tail(path: Path, fd: int) -> int:
    """The file's length once whatever follows its last newline is moved to `torn_path(path)`."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size
    whole, end = 0, size
    while end > 0:
        start = max(0, end - _BLOCK)
        newline = os.pread(fd, end - start, start).rfind(b"\n")
        if newline >= 0:
            whole = start + newline + 1
            break
        end = start
    torn = os.pread(fd, size - whole, whole)
    kept = torn_path(path)
    with naming(kept), kept.open("ab") as aside:  # failing, the tail stays where it is until it can be kept
        aside.write(torn + b"\n")
        aside.flush()
        os.fsync(aside.fileno())
    os.ftruncate(fd, whole)
    log.warning("%s ended in %d bytes of a cut-short append; moved them to %s", path, len(torn), kept)
    return whole
