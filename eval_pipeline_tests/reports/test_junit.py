"""JUnit XML stays readable XML and shows no secret, whatever the ids and messages hold."""

import xml.etree.ElementTree as ET
from datetime import date

import pandas as pd

from eval_pipeline.reports.junit import junit_xml

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def test_control_characters_are_dropped_and_secrets_redacted():
    day = pd.Timestamp(date(2026, 11, 2))
    scores = pd.DataFrame(
        [{"partition_date": day, "agent_id": "bot\x00\x1b", "task_id": "t\x07", "episode_id": "ep\x01\x0b-1",
          "passed": False, "verdict_reason": f"tools [{TOKEN}]\x0c"}]
    )  # fmt: skip
    findings = pd.DataFrame(
        [{"partition_date": day, "agent_id": "bot\x00\x1b", "episode_id": "ep\x01\x0b-1", "dimension": "tool_match",
          "severity": "critical", "message": f"tools [lookup_{TOKEN}] vs baseline [lookup]\x1f"},
         {"partition_date": day, "agent_id": "bot\x00\x1b", "episode_id": None, "dimension": "pass_rate",
          "severity": "critical", "message": "internal INT-4711\x02"}]
    )  # fmt: skip
    judge_failures = pd.DataFrame([{"partition_date": day, "agent_id": "bot\x00\x1b", "failed": 2}])
    xml = junit_xml([day.date()], scores, findings, judge_failures, ["INT-[0-9]+"])
    root = ET.fromstring(xml)  # parses: no character XML 1.0 forbids
    case = root.find(".//testcase[@name='t [ep-1]']")
    assert case is not None and case.get("classname") == "bot"
    assert TOKEN[4:] not in xml and "ghp_…[redacted]" in case.find("failure").text
    assert (
        "INT-4711" not in xml
        and root.find(".//testcase[@name='aggregate pass_rate']/failure").get("message") == "internal …[redacted]"
    )
    assert root.find(".//testcase[@name='judge verdicts']").get("classname") == "bot"


def test_a_per_agent_finding_fails_its_case_at_or_above_fail_on_and_never_reports_as_the_default():
    day = pd.Timestamp(date(2026, 11, 2))
    scores = pd.DataFrame(
        [{"partition_date": day, "agent_id": "bot", "task_id": "t", "episode_id": "ep-1", "passed": True, "verdict_reason": ""}]
    )
    findings = pd.DataFrame(
        [{"partition_date": day, "agent_id": "bot", "episode_id": None, "dimension": "pass_rate", "severity": "warning",
          "message": "pass rate fell"}]
    )  # fmt: skip
    no_judge = pd.DataFrame(columns=["partition_date", "agent_id", "failed"])

    def aggregate(fail_on: str) -> ET.Element:
        root = ET.fromstring(junit_xml([day.date()], scores, findings, no_judge, [], fail_on))
        case = root.find(".//testcase[@name='aggregate pass_rate']")
        assert case is not None and root.get("tests") == "2"
        return case

    gated = aggregate("warning")
    assert (gated.find("failure").get("type"), gated.find("failure").get("message")) == ("warning", "pass rate fell")
    for fail_on in ("critical", "never"):
        shown = aggregate(fail_on)
        assert shown.find("failure") is None and shown.findtext("system-out") == "WARNING pass rate fell"
