"""The whole graph with resources pointing under a test's own directory."""

from pathlib import Path

import dagster as dg

from eval_pipeline.defs.pipeline import assets as pipeline
from eval_pipeline.defs.resources import (
    AlertsResource,
    EpisodeSourceResource,
    EvalConfigResource,
    JudgeResource,
    ReplayResource,
    ReportsResource,
    ViewerResource,
    WarehouseResource,
)

UI_URL = "http://ui.test:3000"
VIEWER_URL = "http://viewer.test:8765"  # pinned: the reports' links (and so the golden files) derive from it

GRAPH = [
    pipeline.capture,
    pipeline.episodes,
    pipeline.baselines,
    pipeline.replays,
    pipeline.assertions,
    pipeline.scores,
    pipeline.regression_findings,
    pipeline.judgements,
    pipeline.pass_at_k,
    pipeline.rewards,
    pipeline.eval_report,
]


def local_resources(
    root: Path,
    *,
    source: str | None = None,
    webhook_url: str = "",
    judge: JudgeResource | None = None,
    config: Path | None = None,
) -> dict:
    """Warehouse, files, reports and alerts under `root`; episodes from `root/episodes` unless `source`; judge off;
    the default config unless `config`."""
    return {
        "warehouse": WarehouseResource(duckdb_path=str(root / "eval.duckdb")),
        "episode_source": EpisodeSourceResource(location=source or str(root / "episodes"), index_path=str(root / "index.json")),
        "eval_config": EvalConfigResource(path=str(config or "")),
        "replay": ReplayResource(),
        "reports": ReportsResource(directory=str(root / "reports")),
        "viewer": ViewerResource(base_url=VIEWER_URL),
        "judge": judge or JudgeResource(),
        "alerts": AlertsResource(
            directory=str(root / "alerts"), webhook_url=webhook_url, ui_base_url=UI_URL, viewer_base_url=VIEWER_URL
        ),
    }


def table_metadata(result: dg.ExecuteInProcessResult, table: str) -> dict:
    """The metadata of `table`'s materialization in a one-partition run (a step may write several tables)."""
    [materialization] = [m for m in result.get_asset_materialization_events() if m.asset_key == dg.AssetKey(table)]
    return materialization.materialization.metadata
