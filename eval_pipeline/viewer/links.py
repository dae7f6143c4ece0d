"""Where each page of the viewer lives: one declaration for the server's routes and every link to them."""

from __future__ import annotations

from datetime import date
from urllib.parse import quote, urlencode

from eval_pipeline.warehouse.viewer import Filters


def day_path(day: date, filters: Filters | None = None) -> str:
    """The day's page with `filters` as its query (the empty ones left out)."""
    chosen = filters.params() if filters else {}
    query = urlencode({name: value for name, value in chosen.items() if value is not None})
    return f"/days/{day.isoformat()}" + (f"?{query}" if query else "")


def episode_path(day: date, episode_id: str) -> str:
    return f"/days/{day.isoformat()}/episodes/{quote(episode_id, safe='')}"


def episode_url(base_url: str, day: date, episode_id: str) -> str:
    """The episode's page as an http link (alerts, reports, Dagster metadata): `base_url` is EVAL_VIEWER_BASE_URL."""
    return base_url.rstrip("/") + episode_path(day, episode_id)


def review_path(day: date) -> str:
    """The day's review queues and how people's labels agree with the verdicts."""
    return f"/days/{day.isoformat()}/review"


def queue_path(day: date, queue: str) -> str:
    """A queue's next episode for the reviewer; a label is POSTed here."""
    return f"{review_path(day)}/{quote(queue, safe='')}"


def promote_path(day: date, episode_id: str) -> str:
    return episode_path(day, episode_id) + "/promote"
