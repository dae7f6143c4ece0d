"""Finding lifecycle: since when a regression has lasted, and whether it is new, persisting or resolved.

A finding's identity across days is (agent, task, dimension); for per-agent findings the task is
empty. A finding present yesterday continues yesterday's run of days (`since` carries over,
`lifecycle` = persisting); one absent yesterday is new; one present yesterday and gone today is
resolved (reported, never stored: today has no breach to store).
"""

from __future__ import annotations

from datetime import date

import pandas as pd

KEY = ["agent_id", "task_key", "dimension"]


def _keyed(findings: pd.DataFrame) -> pd.DataFrame:
    return findings.assign(task_key=findings["task_id"].fillna(""))


def with_lifecycle(today: pd.DataFrame, yesterday: pd.DataFrame, day: date) -> pd.DataFrame:
    """`today` plus `since` (first day of the unbroken run) and `lifecycle` (new or persisting)."""
    if today.empty:
        return today.assign(since=pd.Series(dtype=object), lifecycle=pd.Series(dtype=object))
    earlier = _keyed(yesterday)
    if earlier.empty:
        started = pd.DataFrame(columns=[*KEY, "since_before"])
    else:
        began = earlier["since"].where(earlier["since"].notna(), earlier["partition_date"])
        # as days, whichever way they were read (the warehouse gives timestamps): a new finding's is `day`, and the
        # column must hold one kind to be written
        earlier = earlier.assign(since_before=pd.to_datetime(began).dt.date)
        started = earlier.groupby(KEY, as_index=False)["since_before"].min()
    merged = _keyed(today).merge(started, on=KEY, how="left")
    carried = merged["since_before"].notna()
    merged["since"] = merged["since_before"].where(carried, day)
    merged["lifecycle"] = carried.map({True: "persisting", False: "new"})
    return merged.drop(columns=["task_key", "since_before"]).set_axis(today.index)


def resolved(today: pd.DataFrame, yesterday: pd.DataFrame) -> pd.DataFrame:
    """Yesterday's findings whose (agent, task, dimension) no longer breaches today, one row per identity."""
    if yesterday.empty:
        return yesterday
    gone = _keyed(yesterday).merge(_keyed(today)[KEY].drop_duplicates(), on=KEY, how="left", indicator=True)
    gone = gone[gone["_merge"] == "left_only"].drop(columns=["_merge", "task_key"])
    return gone.sort_values(["agent_id", "dimension", "task_id"], na_position="first").drop_duplicates(
        ["agent_id", "task_id", "dimension"]
    )
