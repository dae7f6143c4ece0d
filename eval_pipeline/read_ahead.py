"""One item ahead: a generator run by a thread while its caller works on what it made last."""

from __future__ import annotations

import queue
import threading
from collections.abc import Generator, Iterator
from contextlib import closing
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

_DONE = object()  # what the thread queues after the last item


@dataclass(frozen=True)
class _Raised:
    error: BaseException  # what making the items raised: the caller raises it


def read_ahead(items: Generator[T]) -> Iterator[T]:
    """`items` in order, the next one made by a thread while the caller works on this one: Python making a batch
    while DuckDB (which releases the GIL) writes the last one. One item ahead at most; what making them raises is
    raised here, and a caller that stops early stops the thread and closes `items`."""
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

    threading.Thread(target=read, name="read-ahead", daemon=True).start()
    try:
        while (item := ready.get()) is not _DONE:
            if isinstance(item, _Raised):
                raise item.error
            yield item
    finally:
        stop.set()
