"""Where each page of the viewer lives: one declaration for the server's routes and every link to them.

The `*_url` forms are the http links other places hand out (alerts, the daily report, Dagster metadata): `base_url`
is EVAL_VIEWER_BASE_URL, the one setting every such link derives from.
"""

from __future__ import annotations

from datetime import date
from urllib.parse import quote, urlencode

from eval_pipeline.regression.compare import Selector
from eval_pipeline.warehouse.viewer import Filters

REPORTS_PREFIX = "/reports/"  # the reports directory's files, served read-only


def days_path(page: int = 1) -> str:
    """The evaluated days, the latest first, at page `page`."""
    return "/" + (f"?page={page}" if page > 1 else "")


def day_path(day: date, filters: Filters | None = None, page: int = 1) -> str:
    """The day's page with `filters` as its query (the empty ones left out), at page `page` of its episodes."""
    chosen = {**(filters.params() if filters else {}), "page": page if page > 1 else None}
    query = urlencode({name: value for name, value in chosen.items() if value is not None})
    return f"/days/{day.isoformat()}" + (f"?{query}" if query else "")


def episode_path(day: date, episode_id: str) -> str:
    return f"/days/{day.isoformat()}/episodes/{quote(episode_id, safe='')}"


def report_path(name: str) -> str:
    return REPORTS_PREFIX + quote(name, safe="")


def day_url(base_url: str, day: date, filters: Filters | None = None) -> str:
    return base_url.rstrip("/") + day_path(day, filters)


def episode_url(base_url: str, day: date, episode_id: str) -> str:
    return base_url.rstrip("/") + episode_path(day, episode_id)


def report_url(base_url: str, name: str) -> str:
    """A file of the reports directory (`eval-report-D.html`) as the viewer serves it."""
    return base_url.rstrip("/") + report_path(name)


def review_path(day: date) -> str:
    """The day's review queues and how people's labels agree with the verdicts."""
    return f"/days/{day.isoformat()}/review"


def queue_path(day: date, queue: str) -> str:
    """A queue's next episode for the reviewer; a label is POSTed here."""
    return f"{review_path(day)}/{quote(queue, safe='')}"


def promote_path(day: date, episode_id: str) -> str:
    return episode_path(day, episode_id) + "/promote"


COMPARE_PREFIX = "/compare"


def compare_path(a: object = None, b: object = None, page: int = 1) -> str:
    """The head to head of two selections, written as `eval-pipeline compare`'s --a and --b, at page `page` of its
    tasks; without them, the form that builds them."""
    chosen = {name: str(side) for name, side in (("a", a), ("b", b)) if side is not None}
    if page > 1:
        chosen["page"] = str(page)
    return COMPARE_PREFIX + (f"?{urlencode(chosen)}" if chosen else "")


def compare_task_path(a: object, b: object, task_id: str, episode_a: str | None = None, episode_b: str | None = None) -> str:
    """A task of that head to head: two of its trials side by side (the first of each side, or those named)."""
    chosen = {"a": str(a), "b": str(b), "task": task_id, "ea": episode_a, "eb": episode_b}
    return f"{COMPARE_PREFIX}/task?" + urlencode({name: value for name, value in chosen.items() if value is not None})


def day_against_path(before: date, day: date, agent: str | None = None) -> str:
    """The head to head of an earlier day (A) and `day` (B), of one agent or of all."""
    return compare_path(Selector(first=before, last=before, agent=agent), Selector(first=day, last=day, agent=agent))
