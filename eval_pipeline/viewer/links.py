"""Where each page of the viewer lives: one declaration for the server's routes and every link to them.

The `*_url` forms are the http links other places hand out (alerts, the daily report, Dagster metadata): `base_url`
is EVAL_VIEWER_BASE_URL, the one setting every such link derives from.
"""

from __future__ import annotations

from datetime import date
from urllib.parse import quote, urlencode

from eval_pipeline.warehouse.viewer import Filters

REPORTS_PREFIX = "/reports/"  # the reports directory's files, served read-only


def day_path(day: date, filters: Filters | None = None) -> str:
    """The day's page with `filters` as its query (the empty ones left out)."""
    chosen = filters.params() if filters else {}
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
