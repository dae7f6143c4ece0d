import threading
import time

import pytest

from eval_pipeline.read_ahead import pipelined, read_ahead


def test_reading_ahead_keeps_the_order_reads_one_item_ahead_and_stops_with_its_caller():
    """The next batch is made while this one is written; a caller that stops (an error, Ctrl-C) stops the making."""
    read: list[int] = []
    freed = threading.Event()

    def source():
        try:
            for batch in range(100):
                read.append(batch)
                yield batch
        finally:
            freed.set()  # the source's file or connection is closed

    batches = read_ahead(source())
    assert [next(batches), next(batches)] == [0, 1]
    time.sleep(0.3)
    assert len(read) <= 4  # the two taken, one queued, one waiting to be queued
    batches.close()
    assert freed.wait(5) and len(read) <= 4
    assert list(read_ahead(n for n in range(1000))) == list(range(1000))


def test_what_making_the_items_raises_is_raised_to_the_caller_after_the_items_before_it():
    def failing():
        yield 1
        raise ConnectionError("store went away")

    taken = []
    with pytest.raises(ConnectionError, match="store went away"):
        for item in read_ahead(failing()):
            taken.append(item)
    assert taken == [1]


def test_pipelined_writes_every_item_in_order_while_the_next_is_worked_on_and_read():
    """Three stages at once: a write of one part is still running while the caller works on the next."""
    events: list[str] = []
    writing = threading.Event()
    overlapped = []

    def parts():
        for part in range(5):
            events.append(f"read {part}")
            yield part

    def work(part: int) -> int:
        overlapped.append(writing.is_set())  # the last part's write has started and not ended
        events.append(f"work {part}")
        return part * 10

    def write(rows: int) -> int:
        writing.set()
        time.sleep(0.05)
        events.append(f"write {rows // 10}")
        writing.clear()
        return rows

    assert pipelined(parts(), work, write) == 100
    assert [e for e in events if e.startswith("write")] == [f"write {part}" for part in range(5)]
    assert [e for e in events if e.startswith("work")] == [f"work {part}" for part in range(5)]
    assert any(overlapped[1:])


@pytest.mark.parametrize("failing", ["work", "write"])
def test_pipelined_raises_what_a_stage_raised_once_every_thread_has_stopped(failing: str):
    """A failed part stops the pipeline: nothing after it is written, the reading thread ends and its source is closed
    before the error reaches the caller (whose connection the reader may be using)."""
    written: list[int] = []
    closed = threading.Event()

    def parts():
        try:
            yield from range(100)
        finally:
            closed.set()

    def work(part: int) -> int:
        if failing == "work" and part == 3:
            raise ValueError("bad part 3")
        return part

    def write(part: int) -> int:
        if failing == "write" and part == 3:
            raise ValueError("bad part 3")
        written.append(part)
        return 1

    with pytest.raises(ValueError, match="bad part 3"):
        pipelined(parts(), work, write)
    assert closed.is_set()
    assert written == [0, 1, 2]
    assert not [t for t in threading.enumerate() if t.name.startswith(("read-ahead", "write-behind"))]
