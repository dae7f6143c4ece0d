"""One item ahead: a generator run by a thread while its caller works on what it made last; and one written behind."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")
U = TypeVar("U")

_DONE = object()  # what the thread queues after the last item


@dataclass(frozen=True)
class _Raised:
    error: BaseException  # what making the items raised: the caller raises it


def read_ahead(items: Generator[T]) -> Generator[T]:
    """`items` in order, the next one made by a thread while the caller works on this one: Python making a batch
    while DuckDB (which releases the GIL) writes the last one. One item ahead at most; what making them raises is
    raised here, and a caller that stops early stops the thread and closes `items` before going on."""
    ready: queue.Queue = queue.Queue(maxsize=1)
    stop = threading.Event()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        with closing(items):  # a caller that stopped early leaves the source's file or connection closed
            try:
                for item in items:
                    if not put(item):
                        return
            except BaseException as error:
                put(_Raised(error))
                return
        put(_DONE)

    thread = threading.Thread(target=read, name="read-ahead", daemon=True)
    thread.start()
    try:
        while (item := ready.get()) is not _DONE:
            if isinstance(item, _Raised):
                raise item.error
            yield item
    finally:
        stop.set()
        thread.join()  # the item being made is finished and `items` closed: what it reads through may be closed next


def pipelined(items: Generator[T], work: Callable[[T], U], write: Callable[[U], int]) -> int:
    """The sum of `write(work(item))` over `items`, in order, in three stages at once: the next item made by a thread
    (`read_ahead`), this one worked on by the caller, the last one written by another thread. DuckDB releases the GIL
    while it reads and writes, so Python's work on a part overlaps both. One item in each stage at most; what a stage
    raises is raised here, after the write in flight has ended."""
    written = 0
    with ThreadPoolExecutor(1, thread_name_prefix="write-behind") as writer, closing(read_ahead(items)) as ahead:
        in_flight: Future[int] | None = None
        for item in ahead:
            done = work(item)
            if in_flight is not None:
                written += in_flight.result()
            in_flight = writer.submit(write, done)
        if in_flight is not None:
            written += in_flight.result()
    return written
