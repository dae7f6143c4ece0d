"""JUnit XML for CI: one test case per scored episode, failures carrying their finding messages.

Every CI system renders JUnit natively. A suite per day of the run, also for a day without
episodes. An episode that did not pass fails with its findings' messages; one without a verdict
(no baseline, no case) is skipped, not passed, and one whose live replay the gateway failed is an
error (the run's exit code 3). A finding at or above the run's `--fail-on` fails its test case as
it fails the exit code (under `--fail-on warning`, a passing episode's warning); below it, it goes
to the case's output. Per-agent and source findings are test cases of their own, failing the same
way; so are an agent's judge verdicts the gateway failed, one error a day.
Every text is redacted, and what XML 1.0 forbids (most control characters) is dropped, so a
hostile id can neither leak a secret nor make the file unreadable.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from datetime import date
from pathlib import Path

import pandas as pd

from eval_pipeline.config import SEVERITY_RANK, fails_the_gate
from eval_pipeline.durable import replace_whole
from eval_pipeline.redaction import redact

NO_VERDICT = "no baseline, case or recorded reward yet"
NOT_IN_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def junit_xml(
    days: Iterable[date],
    scores: pd.DataFrame,
    findings: pd.DataFrame,
    judge_failures: pd.DataFrame,
    secret_patterns: Iterable[str],
    fail_on: str = "critical",
) -> str:
    """`days`: the run's, a suite each, also a day without episodes (a night whose file never came has only its
    source's finding);
    `scores`: partition_date, agent_id, task_id, episode_id, passed, verdict_reason (and `replay_error`, why a live
    replay without a verdict failed);
    `findings`: partition_date, agent_id, episode_id, dimension, severity, message;
    `judge_failures`: partition_date, agent_id, failed (judge verdicts, rubric and pairwise);
    `fail_on`: the run's `--fail-on` severity (`never`, which only keeps the exit code 0, reports as the default)."""
    shown_gate = "critical" if fail_on == "never" else fail_on

    def gating(severity: str) -> bool:
        return fails_the_gate(severity, shown_gate)

    root = ET.Element("testsuites", name="eval_pipeline")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for day in sorted(set(days)):
        stamp = pd.Timestamp(day)
        suite = ET.SubElement(root, "testsuite", name=f"eval {day.isoformat()}")
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        group = scores[scores["partition_date"] == stamp]
        of_the_day = findings[findings["partition_date"] == stamp]
        messages = of_the_day.groupby("episode_id")  # the day's only (an id can come again on another day of a range)
        for row in group.sort_values(["agent_id", "task_id", "episode_id"]).itertuples():
            case = ET.SubElement(suite, "testcase", classname=row.agent_id, name=f"{row.task_id} [{row.episode_id}]")
            counts["tests"] += 1
            found = messages.get_group(row.episode_id) if row.episode_id in messages.groups else None
            lines = [] if found is None else [f"{f.severity.upper()} {f.dimension}: {f.message}" for f in found.itertuples()]
            passed = None if pd.isna(row.passed) else bool(row.passed)
            gate = [] if found is None or passed is False else [f for f in found.itertuples() if gating(f.severity)]
            if gate:  # the exit code fails on these, whatever the episode's verdict
                worst = max((f.severity for f in gate), key=SEVERITY_RANK.__getitem__)
                dimensions = ", ".join(dict.fromkeys(f.dimension for f in gate))
                failure = ET.SubElement(case, "failure", message=f"{worst} {dimensions} (--fail-on {fail_on})", type=worst)
                failure.text = "\n".join(lines)
                counts["failures"] += 1
            elif passed is None:
                replay_error = getattr(row, "replay_error", None)
                if isinstance(replay_error, str):
                    ET.SubElement(case, "error", message=f"no verdict: live replay failed: {replay_error}")
                    counts["errors"] += 1
                else:
                    ET.SubElement(case, "skipped", message=f"no verdict: {NO_VERDICT}")
                    counts["skipped"] += 1
            elif not passed:
                critical = found is not None and (found["severity"] == "critical").any()
                failure = ET.SubElement(case, "failure", message=row.verdict_reason, type="critical" if critical else "failed")
                failure.text = "\n".join([row.verdict_reason, *lines])
                counts["failures"] += 1
            if lines and passed is not False and not gate:  # findings below the gate: shown, not failed
                ET.SubElement(case, "system-out").text = "\n".join(lines)
        for f in of_the_day[of_the_day["episode_id"].isna()].itertuples():
            case = ET.SubElement(suite, "testcase", classname=f.agent_id, name=f"aggregate {f.dimension}")
            counts["tests"] += 1
            if gating(f.severity):
                ET.SubElement(case, "failure", message=f.message, type=f.severity).text = f.message
                counts["failures"] += 1
            else:
                ET.SubElement(case, "system-out").text = f"{f.severity.upper()} {f.message}"
        for j in judge_failures[judge_failures["partition_date"] == stamp].itertuples():
            case = ET.SubElement(suite, "testcase", classname=j.agent_id, name="judge verdicts")
            message = f"{j.failed} judge verdict{'s' if j.failed != 1 else ''} failed after retries: see judgements.reasoning"
            ET.SubElement(case, "error", message=message)
            counts["tests"] += 1
            counts["errors"] += 1
        suite.attrib.update({key: str(value) for key, value in counts.items()})
        totals = {key: totals[key] + counts[key] for key in totals}
    root.attrib.update({key: str(value) for key, value in totals.items()})
    patterns = tuple(secret_patterns)
    for element in root.iter():
        element.attrib = {key: NOT_IN_XML.sub("", redact(value, patterns)) for key, value in element.attrib.items()}
        element.text = element.text and NOT_IN_XML.sub("", redact(element.text, patterns))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(path: Path, xml: str) -> None:
    """`xml` at `path`, its directory made when missing; whole or not at all, as every `--output` file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_whole(path, xml)
