"""Logs rolled over by Python's logging handlers (or logrotate) are the same agent's, and the same files, after the
rollover: `event.txt.1`, `event.txt.2026-11-05` and `event.txt.1.gz` are `event.txt`'s records."""

import calendar
import json
import logging
import logging.handlers
import time
from datetime import timedelta
from pathlib import Path

import pytest

from eval_pipeline.episodes.changes import day_fingerprints, days_to_evaluate
from eval_pipeline.episodes.files import FileSource, logged_name
from eval_pipeline_tests.episodes.test_log_files import DAY, loaded, query, team_run

NINE_AM = calendar.timegm(DAY.timetuple()) + 9 * 3600


class EventLog:
    """autogen_core's event logger (`EVENT_LOGGER_NAME`) through a RotatingFileHandler, as a service configures it;
    its clock held at 09:00 UTC of DAY plus a second per event, so the lines say the day the test needs."""

    def __init__(self, path: Path) -> None:
        self.handler = logging.handlers.RotatingFileHandler(path, maxBytes=0, backupCount=3, encoding="utf-8")
        formatter = logging.Formatter("%(asctime)s - %(name)s - %(levelname)s - %(message)s")
        formatter.converter = time.gmtime
        self.handler.setFormatter(formatter)
        self.logger = logging.getLogger("autogen_core.events")
        self.before = (self.logger.level, self.logger.propagate)  # put back on close: the logger is the process's
        self.logger.setLevel(logging.INFO)
        self.logger.propagate = False
        self.logger.addHandler(self.handler)
        self.events = 0

    def run(self, city: str, start: int) -> None:
        for event in team_run(city, start):
            record = self.logger.makeRecord(self.logger.name, logging.INFO, __file__, 0, json.dumps(event), None, None)
            record.created, record.msecs = NINE_AM + self.events, 0.0
            self.events += 1
            self.logger.handle(record)

    def close(self) -> None:
        self.logger.removeHandler(self.handler)
        self.logger.setLevel(self.before[0])
        self.logger.propagate = self.before[1]
        self.handler.close()


def test_a_team_log_rolled_over_stays_one_agent_and_its_day_is_not_asked_again(tmp_path):
    """A team logs AutoGen's events through logging's RotatingFileHandler. After the handler rolled event.txt over
    to event.txt.1, the runs in event.txt.1 were of agent `event.txt` (the rotated name's stem) beside `event`: new
    episode ids, no baseline, no verdict. And at every rollover the new-episodes sensor saw the day's files change
    and asked for the day again, though no record had."""
    logs = tmp_path / "logs"
    logs.mkdir()
    log = EventLog(logs / "event.txt")
    source = FileSource(logs, tmp_path / "index.json")
    try:
        log.run("Oslo", 0)
        log.handler.doRollover()  # event.txt -> event.txt.1
        log.run("Bergen", 10)
        warehouse, counts = loaded(tmp_path, source)
        assert sorted(path.name for path in logs.iterdir()) == ["event.txt", "event.txt.1"]
        assert (counts.episodes, counts.quarantined) == (2, 0)
        assert query(warehouse, "SELECT episode_id, agent_id, final_output FROM episodes ORDER BY started_at") == [
            ("event:user-0", "event", "Oslo: 4 C."),
            ("event:user-10", "event", "Bergen: 4 C."),
        ]  # as when nothing rolled over (test_log_files)

        next_day = DAY + timedelta(days=1)

        def asked_for(seen: dict[str, str]) -> list[str]:
            """The days the new-episodes sensor asks a run for, the next day, after it saw `seen`."""
            return days_to_evaluate(day_fingerprints(source, next_day, store_window_days=1), seen, next_day, lookback_days=3)

        evaluated = day_fingerprints(source, next_day, store_window_days=1)
        log.handler.doRollover()  # event.txt.1 -> .2, event.txt -> .1, a new event.txt: no record changed
        assert sorted(path.name for path in logs.iterdir()) == ["event.txt", "event.txt.1", "event.txt.2"]
        assert asked_for(evaluated) == []
        log.run("Tromsø", 20)  # a run of the day: that is a change
        assert asked_for(evaluated) == [DAY.isoformat()]
    finally:
        log.close()


@pytest.mark.parametrize(
    ("rotated", "logged"),
    [
        ("logs/event.txt.1", "logs/event.txt"),  # RotatingFileHandler, logrotate
        ("logs/event.txt.12", "logs/event.txt"),
        ("logs/event.txt.1.gz", "logs/event.txt"),  # logrotate's compress
        ("logs/event.txt.2026-11-05", "logs/event.txt"),  # TimedRotatingFileHandler, when="midnight"
        ("logs/event.txt.2026-11-05_09-00-00", "logs/event.txt"),  # when="S"
        ("logs/event.txt.2026-11-05_09", "logs/event.txt"),  # when="H"
        ("logs/event.txt-20261105", "logs/event.txt"),  # logrotate's dateext
        ("logs/event.txt-20261105.gz", "logs/event.txt"),
        ("results.jsonl.gz", "results.jsonl"),
        ("2026-11-05.jsonl", "2026-11-05.jsonl"),  # a day's file is no rotation
        ("runs/gpt-4.1.jsonl", "runs/gpt-4.1.jsonl"),
        ("event.txt", "event.txt"),
    ],
)
def test_the_name_a_file_was_logged_under(rotated, logged):
    assert logged_name(Path(rotated)) == Path(logged)


def test_an_agent_configured_for_a_log_holds_for_its_rolled_over_files(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    log = EventLog(logs / "event.txt")
    try:
        log.run("Oslo", 0)
        log.handler.doRollover()
        log.run("Bergen", 10)
    finally:
        log.close()
    source = FileSource(logs, tmp_path / "index.json", agents={"event.txt": "weather-team"})
    warehouse, _ = loaded(tmp_path, source)
    assert query(warehouse, "SELECT DISTINCT agent_id FROM episodes") == [("weather-team",)]
