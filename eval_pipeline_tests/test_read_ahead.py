import threading
import time

import pytest

from eval_pipeline.read_ahead import read_ahead


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
