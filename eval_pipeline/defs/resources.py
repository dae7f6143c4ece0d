"""Resources, configured from the environment (DESIGN §2); the core objects they hand out know no Dagster."""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
from pydantic import Field, PrivateAttr

from eval_pipeline import plugins
from eval_pipeline.alerts.delivery import alerts_directory, deliver_pending
from eval_pipeline.alerts.messages import MessageLinks
from eval_pipeline.alerts.outbox import DeliveryReport, Outbox
from eval_pipeline.capture.cases import CaseSetError, CaseSpec, load_case_set
from eval_pipeline.config import EvalConfig, GatewayConfig, Price, beside_config, load_config
from eval_pipeline.episodes.files import FileSource
from eval_pipeline.episodes.source import open_source, source_index_path
from eval_pipeline.errors import UserInputError
from eval_pipeline.llm.gateway import Gateway, GatewayError
from eval_pipeline.llm.judge import judge_gateway, judge_off_because
from eval_pipeline.scoring.cases import Case, CasesError, load_cases
from eval_pipeline.scoring.checks import Check
from eval_pipeline.settings import Settings, is_store, live_replay_unready, s3_access
from eval_pipeline.viewer.links import day_url, episode_url, report_url
from eval_pipeline.warehouse.alerts import open_outbox
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline.warehouse.lake import Lake

if TYPE_CHECKING:
    from eval_pipeline.episodes.store import EpisodeStore  # with httpx, imported by `open_source` for a store only


class WarehouseResource(dg.ConfigurableResource):
    duckdb_path: str
    lock_timeout_seconds: float = 300.0
    memory_limit: str | None = None  # DuckDB's own when None
    lake: str = ""  # EVAL_WAREHOUSE=ducklake:...; bound to the variable, as its catalog may hold a password
    lake_data_path: str = ""
    s3: dict[str, str] = Field(default_factory=dict)  # a data path on s3://: the AWS variables (secrets bound to theirs)
    _warehouse: Warehouse | None = PrivateAttr(default=None)

    def get(self) -> Warehouse:
        """The warehouse, one object for as long as this resource lives (a whole run, in process): it checks the
        schema at its first connection only, not at every step's."""
        if self._warehouse is None:
            lake = Lake.parse(self.lake, self.lake_data_path, s3_access(self.s3) if self.s3 else None) if self.lake else None
            self._warehouse = Warehouse(Path(self.duckdb_path), self.lock_timeout_seconds, self.memory_limit, lake)
        return self._warehouse


class EpisodeSourceResource(dg.ConfigurableResource):
    location: str
    index_path: str  # the file source's day index; beside the warehouse, as the source may be read-only
    config_path: str = ""  # plug-in adapters the config lists are looked for beside it

    @property
    def local(self) -> bool:
        """Files, not a store: a step may hold the warehouse across the days it reads, as no day waits on the network."""
        return not is_store(self.location)

    def open(self, config: EvalConfig) -> FileSource | EpisodeStore:
        """The source as the config reads it, with its plug-in adapters; with a case set, a missing directory holds
        no episodes yet."""
        try:
            readers = plugins.adapters(config, Path(self.config_path) if self.config_path else None)
        except UserInputError as exc:
            raise dg.Failure(str(exc)) from None
        required = not config.capture.case_set
        return open_source(self.location, Path(self.index_path), config.sources, config.prices, required, readers)


class EvalConfigResource(dg.ConfigurableResource):
    path: str = ""  # empty: the built-in defaults

    def load(self) -> EvalConfig:
        return load_config(Path(self.path) if self.path else None)

    def relative(self, path: str) -> Path:
        """A path the config names, relative to the config file."""
        return beside_config(Path(self.path) if self.path else None, path)

    def case_set(self, config: EvalConfig) -> list[CaseSpec] | None:
        """The capture's case set (None without one); its path is relative to the config file."""
        if not config.capture.case_set:
            return None
        try:
            return load_case_set(self.relative(config.capture.case_set))
        except CaseSetError as exc:
            raise dg.Failure(str(exc)) from None

    def checks(self, config: EvalConfig, names: list[str] | None) -> tuple[Check, ...]:
        """The checks a run runs: `names` (`run --checks`, all without) among the built-in ones and the plug-ins."""
        try:
            return plugins.checks(config, Path(self.path) if self.path else None, names)
        except UserInputError as exc:
            raise dg.Failure(str(exc)) from None

    def cases(self, config: EvalConfig) -> dict[str, Case]:
        """The cases file's cases by task id; its path is relative to the config file."""
        if not config.cases.path:
            return {}
        try:
            return load_cases(self.relative(config.cases.path))
        except CasesError as exc:
            raise dg.Failure(str(exc)) from None


class _LLMEndpoint(dg.ConfigurableResource):
    """Any OpenAI-compatible server. The key comes only from the environment."""

    base_url: str = ""
    api_key: str = ""


class ReplayResource(_LLMEndpoint):
    """Dry (the recording is the candidate) or live (re-run through an OpenAI-compatible gateway)."""

    mode: str = "dry"  # "dry" or "live"
    candidate_model: str = ""

    def gateway(self, endpoint: GatewayConfig, price: Price | None) -> Gateway:
        unready = live_replay_unready(self.base_url, self.candidate_model)
        if unready:
            raise dg.Failure(unready)
        return Gateway(self.base_url, self.api_key, self.candidate_model, **endpoint.model_dump(), price=price)


class ReportsResource(dg.ConfigurableResource):
    directory: str


class ViewerResource(dg.ConfigurableResource):
    """Where the episode viewer (`eval-pipeline serve`) answers: the http links the Dagster UI shows derive from it."""

    base_url: str  # EVAL_VIEWER_BASE_URL

    def report(self, path: Path) -> str:
        """A file of the reports directory, as the viewer serves it."""
        return report_url(self.base_url, path.name)

    def day(self, day: date) -> str:
        return day_url(self.base_url, day)

    def episode(self, day: date, episode_id: str) -> str:
        return episode_url(self.base_url, day, episode_id)


class AlertsResource(dg.ConfigurableResource):
    """Where regressions are announced. The webhook URL is a secret: it only ever comes from the environment."""

    directory: str  # the outbox and the delivered ledger as files, beside a single-file warehouse
    webhook_url: str = ""  # empty: alerts go to the log and a file in `directory`
    ui_base_url: str  # Dagster's webserver: a message links to its run
    viewer_base_url: str  # the episode viewer: a message links to its day

    def outbox(self, warehouse: WarehouseResource) -> Outbox:
        """The warehouse's outbox: the files in `directory`, or a lake's tables (every host shares them)."""
        return open_outbox(warehouse.get(), Path(self.directory))

    def deliver(self, warehouse: WarehouseResource, secret_patterns: list[str]) -> DeliveryReport:
        links = MessageLinks(ui_base_url=self.ui_base_url, viewer_base_url=self.viewer_base_url)
        return deliver_pending(self.outbox(warehouse), self.webhook_url or None, links, secret_patterns)


class JudgeResource(_LLMEndpoint):
    """The LLM judge: rubric verdicts from `model` on the endpoint."""

    model: str = ""

    @property
    def off_because(self) -> str | None:
        """Why the judge does not run, in one plain line; None when it does."""
        return judge_off_because(self.base_url, self.model, self.api_key)

    def gateway(self, config: EvalConfig) -> Gateway:
        """A gateway within the config's budget, pricing the judge's own calls."""
        try:
            return judge_gateway(self.base_url, self.api_key, self.model, config.judge, config.prices, config.gateway)
        except GatewayError as exc:
            raise dg.Failure(str(exc)) from None


class RunScope(dg.Config):
    """Narrow a run to one agent (`eval-pipeline run --agent`), whose rows alone are replaced, or to some rewards."""

    agent_id: str | None = None
    recapture: bool = False  # capture only: run the agent again even when the day's capture is stored
    trials: int | None = None  # capture only: trials per case, over the config's
    undated_day: str | None = None  # episodes only: the day records without a timestamp belong to (`run --date`)
    rewards: list[str] | None = None  # rewards only: recompute only these (`eval-pipeline reward --name`)
    checks: list[str] | None = None  # assertions only: run only these checks (`run --checks`)
    model: str | None = None  # episodes only: evaluate only this model's episodes (`run --model`)
    limit: int | None = None  # episodes only: at most this many episodes a day, the first by start time (`run --limit`)
    label: str | None = None  # capture only: the label of the runs captured (`run --label`), over agent@revision
    no_cache: bool = False  # live replays only: call the candidate afresh, replacing the cached replays (`run --no-cache`)


def _from_env(name: str) -> dg.EnvVar | str:
    """Bound to the variable when it is set (its value never shows in the UI), else empty."""
    return dg.EnvVar(name) if os.environ.get(name) else ""


def _as_given(name: str, resolved: str) -> dg.EnvVar | str:
    """The variable itself where it already holds the resolved value (a store URL may carry a token, so it
    stays out of the UI), else the resolved value (a relative path made absolute, or the default)."""
    return dg.EnvVar(name) if os.environ.get(name) == resolved else resolved


def resources_for(settings: Settings) -> dict[str, dg.ConfigurableResource]:
    """Every resource, bound to the settings (secrets to their variables)."""
    duckdb_path = str(settings.duckdb_path)
    warehouse = WarehouseResource(
        duckdb_path=duckdb_path,
        memory_limit=settings.duckdb_memory,
        lake=_as_given("EVAL_WAREHOUSE", settings.lake_catalog.get_secret_value()) if settings.lake_catalog else "",
        lake_data_path=settings.lake_data_path or "",
        s3={name: _as_given(name, value) for name, value in settings.lake_s3.as_environment().items() if value}
        if settings.lake_s3
        else {},
    )
    return {
        "warehouse": warehouse,
        "episode_source": EpisodeSourceResource(
            location=_as_given("EVAL_EPISODE_SOURCE", settings.episode_source),
            index_path=source_index_path(duckdb_path),
            config_path=str(settings.config_path or ""),
        ),
        "eval_config": EvalConfigResource(path=str(settings.config_path)) if settings.config_path else EvalConfigResource(),
        "replay": ReplayResource(
            mode=settings.replay_mode,
            base_url=_from_env("OPENAI_BASE_URL"),
            api_key=_from_env("OPENAI_API_KEY"),
            candidate_model=_from_env("EVAL_CANDIDATE_MODEL"),
        ),
        "reports": ReportsResource(directory=str(settings.reports_dir)),
        "viewer": ViewerResource(base_url=settings.viewer_base_url),
        "judge": JudgeResource(
            base_url=_from_env("OPENAI_BASE_URL"), api_key=_from_env("OPENAI_API_KEY"), model=_from_env("EVAL_JUDGE_MODEL")
        ),
        "alerts": AlertsResource(
            directory=str(alerts_directory(settings.duckdb_path)),
            webhook_url=_from_env("EVAL_ALERT_WEBHOOK_URL"),
            ui_base_url=settings.ui_base_url,
            viewer_base_url=settings.viewer_base_url,
        ),
    }


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources=resources_for(Settings.from_environment()))
