"""Where things live: the environment variables of DESIGN §2, resolved once to absolute paths.

The CLI, the Dagster code server and the daemon must agree on every path, so relative values
are resolved against the directory the first command runs in and written back to the
environment, which child processes inherit.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel

PROJECT_ROOT = Path(__file__).resolve().parent.parent

_PATH_DEFAULTS = {
    "EVAL_DUCKDB_PATH": "data/eval.duckdb",
    "EVAL_REPORTS_DIR": "data/reports",
    "DAGSTER_HOME": "data/dagster_home",
}
_SOURCE_DEFAULT = "data/episodes"


class Settings(BaseModel):
    episode_source: str
    duckdb_path: Path
    reports_dir: Path
    dagster_home: Path
    config_path: Path | None
    replay_mode: str
    ui_base_url: str
    alert_webhook_url: str | None  # a secret (Slack's URLs carry a token): never print it

    @property
    def source_is_store(self) -> bool:
        return self.episode_source.startswith(("http://", "https://"))


def _absolute(value: str, cwd: Path) -> str:
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (cwd / path).resolve())


def _default_config_path(cwd: Path) -> str | None:
    for root in (cwd, PROJECT_ROOT):
        for name in ("eval.toml", "eval.yaml"):
            if (root / name).is_file():
                return str(root / name)
    return None


def resolve_environment(cwd: Path | None = None) -> Settings:
    """Fill in defaults for unset variables, make paths absolute, export them, return them."""
    cwd = cwd or Path.cwd()
    env = os.environ
    for name, default in _PATH_DEFAULTS.items():
        env[name] = _absolute(env.get(name) or default, cwd)
    source = env.get("EVAL_EPISODE_SOURCE") or _SOURCE_DEFAULT
    if not source.startswith(("http://", "https://")):
        source = _absolute(source, cwd)
    env["EVAL_EPISODE_SOURCE"] = source
    config = env.get("EVAL_CONFIG") or _default_config_path(cwd)
    if config:
        env["EVAL_CONFIG"] = _absolute(config, cwd)
    env.setdefault("EVAL_REPLAY_MODE", "dry")
    env.setdefault("EVAL_UI_BASE_URL", "http://127.0.0.1:3000")
    return Settings(
        episode_source=source,
        duckdb_path=Path(env["EVAL_DUCKDB_PATH"]),
        reports_dir=Path(env["EVAL_REPORTS_DIR"]),
        dagster_home=Path(env["DAGSTER_HOME"]),
        config_path=Path(env["EVAL_CONFIG"]) if config else None,
        replay_mode=env["EVAL_REPLAY_MODE"],
        ui_base_url=env["EVAL_UI_BASE_URL"],
        alert_webhook_url=env.get("EVAL_ALERT_WEBHOOK_URL") or None,
    )


def ensure_dagster_home(home: Path) -> None:
    """Create DAGSTER_HOME with a dagster.yaml if missing, so run history survives restarts."""
    home.mkdir(parents=True, exist_ok=True)
    target = home / "dagster.yaml"
    if not target.exists():
        target.write_text((PROJECT_ROOT / "dagster.yaml").read_text())
