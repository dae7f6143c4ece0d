"""Where things live and how a run behaves: the environment variables of DESIGN §2, read once.

`Settings.from_environment` reads the variables (never writes them), resolves relative paths against
the directory the command runs in, and validates every value before anything runs: a bad value
raises `SettingsError`, which names the variable and what it accepts. The CLI builds the settings
once and passes them on; the Dagster code location builds its own from the same variables; a child
process (`eval-pipeline ui`) gets the resolved values in its own environment (`as_environment`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from pydantic import BaseModel, ConfigDict, SecretStr

from eval_pipeline.errors import UserInputError
from eval_pipeline.warehouse.s3 import S3Access

if TYPE_CHECKING:
    from eval_pipeline.warehouse.connection import Warehouse
    from eval_pipeline.warehouse.lake import Lake

PROJECT_ROOT = Path(__file__).resolve().parent.parent

ReplayMode = Literal["dry", "live"]
_PATH_DEFAULTS = {
    "EVAL_DUCKDB_PATH": "data/eval.duckdb",
    "EVAL_REPORTS_DIR": "data/reports",
    "DAGSTER_HOME": "data/dagster_home",
}
_SOURCE_DEFAULT = "data/episodes"
VIEWER_PORT_DEFAULT = 8765
VIEWER_BASE_URL_DEFAULT = f"http://127.0.0.1:{VIEWER_PORT_DEFAULT}"
# Each connection's DuckDB memory: every step reads a day in parts, so a million-episode day fits in it (the process
# peaks about 0.7 GiB above it); DuckDB's own default, 80 % of RAM, would let a big day take the machine.
DUCKDB_MEMORY_DEFAULT = "1GiB"
DEFAULT_HISTORY_DAYS = 7  # without EVAL_HISTORY_START or data, the partitions begin this many days before today


class SettingsError(UserInputError):
    """An environment variable holds a value we cannot use; the message names it and what it accepts."""


def is_store(location: str) -> bool:
    """Whether an episode source's location names a store, which answers over the network (a URL), not files."""
    return location.startswith(("http://", "https://"))


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True)

    episode_source: str
    duckdb_path: Path
    reports_dir: Path
    dagster_home: Path
    config_path: Path | None
    replay_mode: ReplayMode
    ui_base_url: str  # Dagster's webserver: links to runs
    viewer_base_url: str  # `eval-pipeline serve`: every http link to a day, an episode or a report file derives from it
    viewer_token: SecretStr | None  # a secret: the viewer requires it when set, and needs it to listen beyond loopback
    history_start: date | None  # the first daily partition, when set; else see `partition_start`
    alert_webhook_url: str | None  # a secret (Slack's URLs carry a token): never print it
    llm_base_url: str | None  # any OpenAI-compatible server, for the judge and live replays
    llm_api_key: SecretStr | None  # a secret: never print it
    judge_model: str | None  # the LLM judge is off without it
    candidate_model: str | None  # what live replay runs (EVAL_REPLAY_MODE=live needs it)
    duckdb_memory: str  # DuckDB's memory_limit per connection: past it, DuckDB spills to disk
    lake_catalog: SecretStr | None  # EVAL_WAREHOUSE=ducklake:...: a DuckLake warehouse; its catalog may hold a password
    lake_data_path: str | None  # EVAL_WAREHOUSE_DATA: the lake's Parquet files, a shared directory or an s3:// URL
    lake_s3: S3Access | None  # how to reach an s3:// data path (AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL, ...)
    backfill_days_per_run: int | None  # a backfill from the UI becomes runs of this many days each; None: one run

    @property
    def live_replay_unready(self) -> str | None:
        """Why the run's live replays could not start, in one line; None when they can or replay is dry."""
        return live_replay_unready(self.llm_base_url, self.candidate_model) if self.replay_mode == "live" else None

    @property
    def source_is_store(self) -> bool:
        return is_store(self.episode_source)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> Settings:
        """The settings `environ` (default: this process's environment) gives, relative paths under `cwd`."""
        env, cwd = os.environ if environ is None else environ, cwd or Path.cwd()
        paths = {name: _absolute(env.get(name) or default, cwd) for name, default in _PATH_DEFAULTS.items()}
        source = env.get("EVAL_EPISODE_SOURCE") or _SOURCE_DEFAULT
        config = env.get("EVAL_CONFIG") or _default_config_path(cwd)
        lake = _lake(env, cwd)
        return cls(
            episode_source=source if is_store(source) else _absolute(source, cwd),
            duckdb_path=Path(paths["EVAL_DUCKDB_PATH"]),
            reports_dir=_reports_dir(env, Path(paths["EVAL_REPORTS_DIR"]), lake["lake_data_path"]),
            dagster_home=Path(paths["DAGSTER_HOME"]),
            config_path=Path(_absolute(config, cwd)) if config else None,
            replay_mode=_replay_mode(env.get("EVAL_REPLAY_MODE") or "dry"),
            ui_base_url=_url("EVAL_UI_BASE_URL", env.get("EVAL_UI_BASE_URL") or "http://127.0.0.1:3000"),
            viewer_base_url=_url("EVAL_VIEWER_BASE_URL", env.get("EVAL_VIEWER_BASE_URL") or VIEWER_BASE_URL_DEFAULT),
            viewer_token=SecretStr(env["EVAL_UI_TOKEN"]) if env.get("EVAL_UI_TOKEN") else None,
            history_start=_day("EVAL_HISTORY_START", env["EVAL_HISTORY_START"]) if env.get("EVAL_HISTORY_START") else None,
            alert_webhook_url=env.get("EVAL_ALERT_WEBHOOK_URL") or None,
            llm_base_url=_url("OPENAI_BASE_URL", env["OPENAI_BASE_URL"]) if env.get("OPENAI_BASE_URL") else None,
            llm_api_key=SecretStr(env["OPENAI_API_KEY"]) if env.get("OPENAI_API_KEY") else None,
            judge_model=env.get("EVAL_JUDGE_MODEL") or None,
            candidate_model=env.get("EVAL_CANDIDATE_MODEL") or None,
            duckdb_memory=_amount("EVAL_DUCKDB_MEMORY_LIMIT", env.get("EVAL_DUCKDB_MEMORY_LIMIT") or DUCKDB_MEMORY_DEFAULT),
            backfill_days_per_run=_days_per_run(env["EVAL_BACKFILL_DAYS_PER_RUN"])
            if env.get("EVAL_BACKFILL_DAYS_PER_RUN")
            else None,
            **lake,
        )

    def as_environment(self) -> dict[str, str]:
        """The variables that give these settings in a child process, whatever its working directory."""
        resolved = {
            "EVAL_EPISODE_SOURCE": self.episode_source,
            "EVAL_DUCKDB_PATH": str(self.duckdb_path),
            "EVAL_REPORTS_DIR": str(self.reports_dir),
            "DAGSTER_HOME": str(self.dagster_home),
            "EVAL_REPLAY_MODE": self.replay_mode,
            "EVAL_UI_BASE_URL": self.ui_base_url,
            "EVAL_VIEWER_BASE_URL": self.viewer_base_url,
        }
        optional = {
            "EVAL_WAREHOUSE": self.lake_catalog.get_secret_value() if self.lake_catalog else None,
            "EVAL_WAREHOUSE_DATA": self.lake_data_path,
            "EVAL_CONFIG": self.config_path,
            "EVAL_HISTORY_START": self.history_start,
            "EVAL_DUCKDB_MEMORY_LIMIT": self.duckdb_memory,
            "EVAL_BACKFILL_DAYS_PER_RUN": self.backfill_days_per_run,
            **(self.lake_s3.as_environment() if self.lake_s3 else {}),
        }
        return resolved | {name: str(value) for name, value in optional.items() if value}

    def warehouse(self) -> Warehouse:
        """The warehouse these settings name, held to their memory limit."""
        from eval_pipeline.warehouse.connection import Warehouse

        return Warehouse(self.duckdb_path, memory_limit=self.duckdb_memory, lake=self.lake())

    def lake(self) -> Lake | None:
        """The DuckLake warehouse EVAL_WAREHOUSE names; None for the single file at EVAL_DUCKDB_PATH."""
        from eval_pipeline.warehouse.lake import Lake

        if self.lake_catalog is None or self.lake_data_path is None:
            return None
        return Lake.parse(self.lake_catalog.get_secret_value(), self.lake_data_path, self.lake_s3)

    def partition_start(self, today: date) -> date:
        """The first daily partition: EVAL_HISTORY_START, else the first day the warehouse has evaluated, else a
        week before `today`. So a fresh install or the demo does not look years behind in the UI, while the
        partitions never drop a day the warehouse holds; older history needs EVAL_HISTORY_START."""
        from eval_pipeline.warehouse.partitions import first_evaluated_day

        if self.history_start:
            return self.history_start
        warehouse = self.warehouse()
        first = first_evaluated_day(warehouse) if warehouse.exists() else None
        return first or today - timedelta(days=DEFAULT_HISTORY_DAYS)


def _lake(env: Mapping[str, str], cwd: Path) -> dict[str, SecretStr | str | S3Access | None]:
    """EVAL_WAREHOUSE and EVAL_WAREHOUSE_DATA: a DuckLake warehouse, or (unset) the single DuckDB file."""
    from eval_pipeline.warehouse.lake import Lake

    setting, data = env.get("EVAL_WAREHOUSE") or "", env.get("EVAL_WAREHOUSE_DATA") or ""
    if not setting:
        if data:
            raise SettingsError("EVAL_WAREHOUSE_DATA is set without EVAL_WAREHOUSE=ducklake:<catalog>: it names a lake's data")
        return {"lake_catalog": None, "lake_data_path": None, "lake_s3": None}
    data = data if "://" in data else _absolute(data, cwd) + "/" if data else ""
    try:
        Lake.parse(setting, data)
    except ValueError as exc:
        raise SettingsError(f"EVAL_WAREHOUSE / EVAL_WAREHOUSE_DATA: {exc}") from None
    return {
        "lake_catalog": SecretStr(setting),
        "lake_data_path": data,
        "lake_s3": s3_access(env) if data.startswith("s3://") else None,
    }


def _reports_dir(env: Mapping[str, str], resolved: Path, lake_data_path: object) -> Path:
    """EVAL_REPORTS_DIR; unset beside a lake whose data is a directory, under it: every host that runs days writes its
    reports where the viewer on any host finds them."""
    if env.get("EVAL_REPORTS_DIR") or not isinstance(lake_data_path, str) or "://" in lake_data_path:
        return resolved
    return Path(lake_data_path) / "reports"


def s3_access(env: Mapping[str, str]) -> S3Access:
    """A data path on S3 or an S3-compatible store: AWS's own variables, as every S3 client reads them."""
    if not env.get("AWS_ACCESS_KEY_ID") or not env.get("AWS_SECRET_ACCESS_KEY"):
        raise SettingsError("EVAL_WAREHOUSE_DATA on s3:// needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
    endpoint = env.get("AWS_ENDPOINT_URL") or ""  # another store than AWS's, e.g. http://minio.internal:9000
    if endpoint and not endpoint.startswith(("http://", "https://")):
        raise SettingsError(f"AWS_ENDPOINT_URL must be an http:// or https:// URL, not {endpoint!r}")
    return S3Access(
        key_id=env["AWS_ACCESS_KEY_ID"],
        secret=env["AWS_SECRET_ACCESS_KEY"],
        region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
        endpoint=endpoint.partition("://")[2].rstrip("/") or None,
        use_ssl=not endpoint.startswith("http://"),
        session_token=env.get("AWS_SESSION_TOKEN") or None,
    )


def live_replay_unready(base_url: str | None, candidate_model: str | None) -> str | None:
    """What live replay lacks of its endpoint and model, in one line; None when it has both."""
    missing = [name for name, given in (("OPENAI_BASE_URL", base_url), ("EVAL_CANDIDATE_MODEL", candidate_model)) if not given]
    return f"EVAL_REPLAY_MODE=live needs {' and '.join(missing)} set" if missing else None


def _absolute(value: str, cwd: Path) -> str:
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (cwd / path).resolve())


def _default_config_path(cwd: Path) -> str | None:
    for root in (cwd, PROJECT_ROOT):
        for name in ("eval.toml", "eval.yaml"):
            if (root / name).is_file():
                return str(root / name)
    return None


def _replay_mode(value: str) -> ReplayMode:
    if value not in get_args(ReplayMode):
        raise SettingsError(f"EVAL_REPLAY_MODE must be one of {', '.join(get_args(ReplayMode))}, not {value!r}")
    return value  # type: ignore[return-value]


def _day(name: str, value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise SettingsError(f"{name} must be a date as YYYY-MM-DD, not {value!r}") from None


def _amount(name: str, value: str) -> str:
    if not re.fullmatch(r"\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)", value.strip(), re.IGNORECASE):
        raise SettingsError(f"{name} must be an amount of memory such as 512MB or 2GiB, not {value!r}")
    return value.strip()


def _days_per_run(value: str) -> int:
    if not value.strip().isdigit() or int(value) < 1:
        raise SettingsError(f"EVAL_BACKFILL_DAYS_PER_RUN must be a whole number of days, at least 1, not {value!r}")
    return int(value)


def _url(name: str, value: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise SettingsError(f"{name} must be an http:// or https:// URL, not {value!r}")
    return value.rstrip("/")


def ensure_dagster_home(home: Path) -> None:
    """Create DAGSTER_HOME with a dagster.yaml if missing, so run history survives restarts."""
    home.mkdir(parents=True, exist_ok=True)
    target = home / "dagster.yaml"
    if not target.exists():
        target.write_text((PROJECT_ROOT / "dagster.yaml").read_text())
