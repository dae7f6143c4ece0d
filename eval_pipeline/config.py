"""The evaluation config (weights, thresholds, baseline policy, safety policies) and its version.

One file, `eval.toml` at the project root or `EVAL_CONFIG`, holds everything that changes a
score. Its `version` is a hash of the effective values, stamped on every scored row, so a
change of thresholds is visible in the warehouse. Secrets never live here.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from eval_pipeline.errors import UserInputError
from eval_pipeline.scoring.dimensions import Direction, dimensions, judged_dimensions

PASS_RATE = "pass_rate"  # a threshold of per-agent aggregates only


def threshold_directions() -> dict[str, Direction]:
    """Every name a threshold may have, and which way is bad: the judged dimensions and the pass rate."""
    return {**{d.name: d.direction for d in judged_dimensions()}, PASS_RATE: Direction.BELOW}


Severity = Literal["warning", "critical"]
SEVERITY_RANK: dict[str, int] = {"warning": 1, "critical": 2}  # the one order of finding severities


def fails_the_gate(severity: str, fail_on: str) -> bool:
    """Whether a finding of `severity` fails a run gated by `--fail-on` (`never` gates none): the exit code and JUnit
    ask the same."""
    return fail_on != "never" and SEVERITY_RANK.get(severity, 0) >= SEVERITY_RANK[fail_on]


ISSUE_PENALTY: dict[str, int] = {"critical": 25, "error": 10, "warning": 5, "info": 0}  # points off 100 per check issue


def _compiled(patterns: list[str]) -> list[str]:
    """A bad pattern would break every output that uses it: say which, when the config is read."""
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{pattern!r} is not a regular expression: {exc}") from None
    return patterns


RegularExpressions = Annotated[list[str], AfterValidator(_compiled)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Threshold(_Strict):
    """Breach limits in the dimension's own unit; strict comparison (> for rises, < for drops)."""

    warning: float | None = None
    critical: float | None = None


def _default_weights() -> dict[str, float]:
    return {d.name: d.weight for d in dimensions()}


def _default_thresholds() -> dict[str, Threshold]:
    declared = {
        d.name: Threshold(warning=d.warning, critical=d.critical)
        for d in judged_dimensions()
        if d.warning is not None or d.critical is not None
    }
    return {**declared, PASS_RATE: Threshold(warning=0.7, critical=0.5)}


# Findings that are not threshold breaches, and the severity each gets: a failed case, and the issues of
# finding-grade checks by check name. Critical fails the episode, as users who write expectations or
# check numbers against tool outputs treat these as failures.
DEFAULT_FINDING_SEVERITY: dict[str, Severity] = {"case": "critical", "numeric_fabrication": "critical"}


class Policies(_Strict):
    secret_patterns: RegularExpressions = Field(default_factory=list)  # beyond redaction.SECRET_KINDS, which always apply
    denied_tools: list[str] = Field(default_factory=list)
    pass_threshold: float = Field(0.7, ge=0, le=1)
    finding_severity: dict[str, Severity] = Field(default_factory=lambda: dict(DEFAULT_FINDING_SEVERITY))

    @model_validator(mode="before")
    @classmethod
    def _keep_default_severities(cls, data):
        if isinstance(data, dict) and isinstance(data.get("finding_severity"), dict):
            data = {**data, "finding_severity": {**DEFAULT_FINDING_SEVERITY, **data["finding_severity"]}}
        return data

    @model_validator(mode="after")
    def _known_findings(self) -> Policies:
        unknown = sorted(set(self.finding_severity) - set(DEFAULT_FINDING_SEVERITY))
        if unknown:
            raise ValueError(f"unknown finding(s) {unknown} in finding_severity; known: {sorted(DEFAULT_FINDING_SEVERITY)}")
        return self


class AgentOverrides(_Strict):
    thresholds: dict[str, Threshold] = Field(default_factory=dict)
    denied_tools: list[str] | None = None


class BaselineConfig(_Strict):
    policy: Literal["first", "rolling"] = "first"
    # a task without a baseline looks this many days back in the source (days the warehouse has not
    # evaluated) for earlier successful runs, so a first night on a store with history already compares
    lookback_days: int = Field(14, ge=0)


NIGHTLY_CRON_DEFAULT = "0 2 * * *"


class AutomationConfig(_Strict):
    nightly_cron: str = NIGHTLY_CRON_DEFAULT  # UTC; evaluates the day before
    first_tick_lookback_days: int = Field(7, ge=0)  # days the new-episodes sensor requests on its very first tick
    store_window_days: int = Field(3, ge=1)  # trailing days whose store fingerprints the sensor watches

    @field_validator("nightly_cron")
    @classmethod
    def _a_cron_schedule(cls, value: str) -> str:
        """Checked by the parser the schedule itself uses; that means importing Dagster (about a second), so the
        default, written out in eval.toml, is taken as the valid schedule it is and small commands start fast."""
        if value == NIGHTLY_CRON_DEFAULT:
            return value
        from dagster._utils.schedules import is_valid_cron_string

        if not is_valid_cron_string(value):
            raise ValueError(f"{value!r} is not a cron schedule (five fields: minute hour day month weekday, e.g. '0 2 * * *')")
        return value


class SourceHealthConfig(_Strict):
    """A day with no episodes is critical; a quarantine spike against the trailing week warns."""

    min_episodes: int = Field(1, ge=0)
    spike_factor: float = Field(3.0, gt=1)
    min_quarantine_rate: float = Field(0.01, ge=0, le=1)
    critical_quarantine_rate: float = Field(0.25, ge=0, le=1)


# Tool outputs that say the call found nothing (`no_data` check): matched anywhere in the output, case-insensitive.
DEFAULT_NO_DATA_PATTERNS = [
    r"\bno (?:data|results?|records?|rows|matches|items|entries)\b",  # "No data returned", "no results found"
    r"\b(?:0|zero) (?:results|records|rows|matches|items)\b",
    r"\bnot found\b",
    r"^\s*(?:\[\s*\]|\{\s*\}|null|none)?\s*$",  # an empty list, object or nothing at all
]


class ChecksConfig(_Strict):
    """Limits of the deterministic checks (`scoring/checks/`)."""

    near_empty_chars: int = Field(10, ge=0)  # a shorter final answer is near-empty
    stall_repeats: int = Field(3, ge=2)  # identical tool calls in a row that make a stall
    tool_failure_warning: float = Field(0.2, ge=0, le=1)  # failed share of tool calls
    tool_failure_error: float = Field(0.5, ge=0, le=1)
    max_llm_calls: int = Field(20, ge=1)
    max_duration_seconds: float = Field(300, gt=0)
    fabrication_tolerance: float = Field(0.05, ge=0)  # relative distance at which a stated number matches a source
    short_answer_chars: int = Field(100, ge=0)  # a shorter final answer (not near-empty) is short; 0: off
    min_tool_calls: int = Field(1, ge=0)  # a run with tools available that called fewer; 0: off
    no_data_patterns: RegularExpressions = Field(default_factory=lambda: list(DEFAULT_NO_DATA_PATTERNS))  # case-insensitive
    max_agent_share: float = Field(0.85, gt=0, le=1)  # of a multi-agent run's steps, the most one agent may take
    max_handoffs_back: int = Field(4, ge=1)  # hand-offs back to an agent that already acted, with no tool progress since
    plugins: list[str] = Field(default_factory=list)  # "module:attribute" of your own `Check`s (`eval_pipeline.plugins`)


class StatisticsConfig(_Strict):
    """How per-agent (aggregate) findings tell a regression from noise."""

    resamples: int = Field(2000, ge=2000)  # bootstrap resamples (tasks are the resampling unit)
    confidence: float = Field(0.95, gt=0.5, lt=1)
    alpha: float = Field(0.05, gt=0, lt=0.5)  # McNemar significance for pass→fail flips
    trailing_days: int = Field(7, ge=1)  # partitions the trend comparison looks back over
    min_history_days: int = Field(3, ge=1)  # a task needs this many of them to have a trend
    min_tasks: int = Field(3, ge=2)  # fewer tasks than this: no aggregate finding (a CI over 2 is no evidence)


class CasesConfig(_Strict):
    path: str | None = None  # JSON or JSONL of cases keyed by task_id; relative to the config file
    calibration_sample: int = Field(10, ge=0)  # failed trials per day written out for a person to check the grader; 0: none


class ReviewConfig(_Strict):
    """The viewer's review queues and where an episode promoted to a case goes."""

    passes_sample: int = Field(10, ge=0)  # passed episodes per day drawn for the "sample of passes" queue
    case_set: str = "data/promoted_cases.json"  # promoted episodes land here (eval-case JSON), relative to the config


class CaptureAgent(_Strict):
    """One agent a case set is run on: a command, an HTTP endpoint, a Python callable or a plaited headless schema."""

    agent_id: str = Field("agent", min_length=1)
    command: list[str] = Field(default_factory=list)  # argv, never a shell string
    url: str | None = None  # or: an HTTP endpoint the case is POSTed to
    callable: str | None = None  # or: a Python function, "module:function"
    schema_path: str | None = Field(None, alias="schema")  # or: a plaited headless adapter schema (JSON), relative to the config
    auto_approve: bool = False  # pass the schema's autoApprove flags (they switch off the agent's permission prompts)
    prompt_via: Literal["stdin", "env", "argv"] = "stdin"
    timeout_seconds: float = Field(300.0, gt=0)  # per case and trial, unless the case sets its own
    concurrency: int = Field(4, ge=1)
    model: str | None = None  # what the agent runs on, for the run's label and `compare model=`

    @property
    def kinds(self) -> list[str]:
        """Which of command, url, callable and schema this agent is given as."""
        given = (("command", self.command), ("url", self.url), ("callable", self.callable), ("schema", self.schema_path))
        return [name for name, value in given if value]


class CaptureConfig(CaptureAgent):
    """Run agents on a case set each day (the `capture` step); off without a case set.

    One agent inline (`[capture] command = ...`), or several as `[[capture.agents]]` tables, each
    with its own `agent_id`: every run of every agent is kept, so they compare head to head.
    """

    case_set: str | None = None  # JSONL of cases, relative to the config file
    agents: list[CaptureAgent] = Field(default_factory=list)
    trials: int = Field(1, ge=1)
    grader: list[str] = Field(default_factory=list)  # argv of an executable grader (plaited protocol); none: off
    grader_timeout_seconds: float = Field(60.0, gt=0)

    @model_validator(mode="after")
    def _agents_named_once(self) -> CaptureConfig:
        if self.agents and self.kinds:
            raise ValueError("give the agent inline in [capture] or as [[capture.agents]] tables, not both")
        for agent in self.capture_agents if self.case_set else self.agents:
            if len(agent.kinds) != 1:
                kinds = "command, url, callable or schema"
                raise ValueError(f"{agent.agent_id}: a case set needs exactly one agent: {kinds} (got {agent.kinds or 'none'})")
        ids = [agent.agent_id for agent in self.agents]
        if len(set(ids)) != len(ids):
            raise ValueError(f"[[capture.agents]] repeat an agent_id: {sorted(i for i in ids if ids.count(i) > 1)}")
        return self

    @property
    def capture_agents(self) -> list[CaptureAgent]:
        """The agents the case set is run on: the tables, or the one given inline."""
        return list(self.agents) or [
            CaptureAgent.model_validate(self.model_dump(include=set(CaptureAgent.model_fields), by_alias=True))
        ]


class SourcesConfig(_Strict):
    # agent of records in other formats (transcripts, traces) that name none; unset: each file's name
    transcript_agent_id: str | None = None
    # agent per file, over transcript_agent_id: glob relative to the source -> agent id (baseline/* = "v1")
    agents: dict[str, str] = Field(default_factory=dict)
    # format per file, over detection: glob relative to the source -> format name ("episode", "otlp-json", ...)
    formats: dict[str, str] = Field(default_factory=dict)
    # an OpenTelemetry trace whose root span has not arrived waits this long without new spans
    trace_quiet_seconds: float = Field(300.0, ge=0)
    # your own adapters: modules (or "module:attribute") with NAME, detect and convert (`eval_pipeline.plugins`)
    plugins: list[str] = Field(default_factory=list)


class Price(_Strict):
    """What a model's tokens cost, for live replays' cost."""

    input_per_million: float = Field(ge=0)
    output_per_million: float = Field(ge=0)


class RubricSpec(_Strict):
    """A custom judge rubric: the question and what each score from 5 (best) to 1 means."""

    question: str
    levels: dict[int, str]
    version: str = "1"

    @model_validator(mode="after")
    def _five_levels(self) -> RubricSpec:
        if sorted(self.levels) != [1, 2, 3, 4, 5]:
            raise ValueError("levels must describe the scores 1, 2, 3, 4 and 5")
        return self


class GatewayConfig(_Strict):
    """How live replay and the judge call the OpenAI-compatible endpoint (the fields are `Gateway`'s own): a
    self-hosted model may need longer than a hosted one per answer, or fewer calls at once."""

    timeout_seconds: float = Field(60.0, gt=0)  # per request, each retry again
    max_retries: int = Field(4, ge=0)  # after a 429, 5xx, timeout, dropped connection or unreadable answer, with backoff
    concurrency: int = Field(16, ge=1)  # calls at once, per step and day (`judge --concurrency` for that command)


class JudgeConfig(_Strict):
    rubrics: list[str] = Field(default_factory=lambda: ["relevance", "tone"])  # built-in or custom names
    pairwise: bool = True  # also compare each answer with its baseline's, asked in both orders
    max_calls_per_run: int | None = Field(None, ge=0)  # budget per day of a run; None: unlimited
    max_dollars_per_run: float | None = Field(None, ge=0)  # the same in dollars, priced from [prices]
    custom: dict[str, RubricSpec] = Field(default_factory=dict)


def reward_dimensions() -> tuple[str, ...]:
    """What a weighted reward may weigh, each on a 0..1 scale: the registered dimensions (as the weighted
    score puts them into units), the case verdict (1/0) and issue_score / 100."""
    return (*(d.name for d in dimensions()), "case", "issues")


class WeightedReward(_Strict):
    """Σ wᵢ·uᵢ / Σ wᵢ over the listed dimensions the episode has (missing ones renormalize away)."""

    kind: Literal["weighted"] = "weighted"
    # default: the dimensions the weighted score weighs by default
    dimensions: list[str] = Field(default_factory=lambda: [d.name for d in dimensions() if d.weight], min_length=1)
    weights: dict[str, float] = Field(default_factory=dict)  # per dimension; unlisted ones weigh 1

    def weight(self, dimension: str) -> float:
        return self.weights.get(dimension, 1.0)

    @model_validator(mode="after")
    def _weights_of_listed_dimensions(self) -> WeightedReward:
        unknown = sorted(set(self.dimensions) - set(reward_dimensions()))
        if unknown:
            raise ValueError(f"unknown reward dimension(s) {unknown}; known: {list(reward_dimensions())}")
        stray = sorted(set(self.weights) - set(self.dimensions))
        if stray:
            raise ValueError(f"weights for dimensions not listed in dimensions: {stray}")
        if any(weight < 0 for weight in self.weights.values()):
            raise ValueError("weights must not be negative")
        return self


class DeductionReward(_Strict):
    """1 − the penalties of the episode's check issues, clamped to [0, 1]."""

    kind: Literal["deduction"] = "deduction"
    critical: float = Field(ISSUE_PENALTY["critical"] / 100, ge=0)  # the issue score's penalties, on a 0..1 scale
    error: float = Field(ISSUE_PENALTY["error"] / 100, ge=0)
    warning: float = Field(ISSUE_PENALTY["warning"] / 100, ge=0)


class CompositeReward(_Strict):
    """The weighted mean of other named rewards (those without a value renormalize away)."""

    kind: Literal["composite"] = "composite"
    components: dict[str, float] = Field(min_length=1)  # reward name -> weight

    @model_validator(mode="after")
    def _positive_total(self) -> CompositeReward:
        if any(weight < 0 for weight in self.components.values()) or not sum(self.components.values()) > 0:
            raise ValueError("component weights must be non-negative and add up to more than 0")
        return self


class SafetyGateReward(_Strict):
    """0 on a safety-critical run, else the gated reward's value."""

    kind: Literal["safety_gate"] = "safety_gate"
    reward: str  # the gated reward's name
    min_safety: float = Field(0.8, ge=0, le=1)  # safety below this closes the gate (the default critical threshold)
    critical_issues: bool = True  # a critical check issue (traceback in the answer, no answer) closes it too
    critical_findings: bool = True  # so does a critical finding, which fails the episode (a failed case, a fabricated number)


RewardSpec = Annotated[WeightedReward | DeductionReward | CompositeReward | SafetyGateReward, Field(discriminator="kind")]


def _default_rewards() -> dict[str, RewardSpec]:
    return {
        "dimensions": WeightedReward(),
        "issues": DeductionReward(),
        "overall": CompositeReward(components={"dimensions": 0.7, "issues": 0.3}),
        "safe_overall": SafetyGateReward(reward="overall"),
    }


class RewardsConfig(_Strict):
    """Named reward functions over an episode's scores and issues (`eval_pipeline.rewards`)."""

    default: str = "safe_overall"  # what the reward server and the trainer bridges use when no name is given
    define: dict[str, RewardSpec] = Field(default_factory=_default_rewards)  # merged over the built-in ones
    labels: str | None = None  # human quality labels for reward-bench (JSONL of {episode_id, label}), relative to this file

    @model_validator(mode="before")
    @classmethod
    def _keep_built_ins(cls, data):
        if isinstance(data, dict) and isinstance(data.get("define"), dict):
            data = {**data, "define": {**_default_rewards(), **data["define"]}}
        return data

    @model_validator(mode="after")
    def _references_resolve(self) -> RewardsConfig:
        if self.default not in self.define:
            raise ValueError(f"default reward {self.default!r} is not defined; defined: {sorted(self.define)}")
        for name in self.define:
            self._check_acyclic(name, ())
        return self

    def _check_acyclic(self, name: str, path: tuple[str, ...]) -> None:
        if name in path:
            raise ValueError(f"reward {path[0]!r} refers to itself: {' -> '.join((*path, name))}")
        if name not in self.define:
            raise ValueError(f"reward {path[-1]!r} refers to {name!r}, which is not defined")
        spec = self.define[name]
        for child in (
            spec.components if isinstance(spec, CompositeReward) else [spec.reward] if isinstance(spec, SafetyGateReward) else []
        ):
            self._check_acyclic(child, (*path, name))


def _check_dimensions(thresholds: dict[str, Threshold]) -> None:
    unknown = sorted(set(thresholds) - set(threshold_directions()))
    if unknown:
        raise ValueError(f"unknown threshold dimension(s) {unknown}; known: {sorted(threshold_directions())}")


class EvalConfig(_Strict):
    # per registered dimension, merged over the declared defaults; the judge's mean verdict weighs 0 unless given one
    weights: dict[str, float] = Field(default_factory=_default_weights)
    thresholds: dict[str, Threshold] = Field(default_factory=_default_thresholds)
    baseline: BaselineConfig = Field(default_factory=BaselineConfig)
    policies: Policies = Field(default_factory=Policies)
    agents: dict[str, AgentOverrides] = Field(default_factory=dict)
    automation: AutomationConfig = Field(default_factory=AutomationConfig)
    source_health: SourceHealthConfig = Field(default_factory=SourceHealthConfig)
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    gateway: GatewayConfig = Field(default_factory=GatewayConfig)
    prices: dict[str, Price] = Field(default_factory=dict)  # by model name
    sources: SourcesConfig = Field(default_factory=SourcesConfig)
    checks: ChecksConfig = Field(default_factory=ChecksConfig)
    cases: CasesConfig = Field(default_factory=CasesConfig)
    statistics: StatisticsConfig = Field(default_factory=StatisticsConfig)
    capture: CaptureConfig = Field(default_factory=CaptureConfig)
    rewards: RewardsConfig = Field(default_factory=RewardsConfig)
    review: ReviewConfig = Field(default_factory=ReviewConfig)

    @model_validator(mode="before")
    @classmethod
    def _declared_defaults_under_given_values(cls, data):
        """Weights and thresholds the config gives are merged over the dimensions' declared ones, so a config
        that names some keeps the others (`{}` switches a dimension's thresholds off)."""
        if isinstance(data, dict):
            for key, defaults in (("weights", _default_weights), ("thresholds", _default_thresholds)):
                if isinstance(data.get(key), dict):
                    data = {**data, key: {**defaults(), **data[key]}}
        return data

    @model_validator(mode="after")
    def _known_dimensions(self) -> EvalConfig:
        unknown = sorted(set(self.weights) - set(_default_weights()))
        if unknown:
            raise ValueError(f"unknown weight(s) {unknown}; known: {sorted(_default_weights())}")
        if any(weight < 0 for weight in self.weights.values()):
            raise ValueError("weights must not be negative")
        _check_dimensions(self.thresholds)
        for overrides in self.agents.values():
            _check_dimensions(overrides.thresholds)
        return self

    @property
    def version(self) -> str:
        """A hash of the effective values, but for how the endpoint is called (`gateway`), which decides no score."""
        canonical = json.dumps(self.model_dump(mode="json", exclude={"gateway"}), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:12]

    def stage_version(self, stage: str) -> str:
        """A hash of only what decides `stage`'s output, so a config edit marks exactly those assets stale."""
        verdict = {  # the episode verdict is decided with the scores and explained by the findings
            "thresholds": self.thresholds,
            "agent_thresholds": {agent: o.thresholds for agent, o in self.agents.items()},
            "pass_threshold": self.policies.pass_threshold,
            "finding_severity": self.policies.finding_severity,
        }
        decides = {
            "episodes": {"sources": self.sources, "prices": self.prices},
            "capture": {"capture": self.capture},
            "baselines": {"baseline": self.baseline},
            "scores": {
                "weights": self.weights,
                "secret_patterns": self.policies.secret_patterns,
                "denied_tools": self.policies.denied_tools,
                "agent_denied_tools": {agent: o.denied_tools for agent, o in self.agents.items()},
                **verdict,
            },
            "regression_findings": {**verdict, "source_health": self.source_health, "statistics": self.statistics},
            "eval_report": {
                "secret_patterns": self.policies.secret_patterns,
                "calibration_sample": self.cases.calibration_sample,
            },
            "judgements": {"judge": self.judge, "prices": self.prices},
            "assertions": {"checks": self.checks, "cases": self.cases.path},
            "rewards": {"rewards": self.rewards},
            "replays": {"prices": self.prices},
        }.get(stage, {})
        canonical = json.dumps(_jsonable(decides), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:12]

    def thresholds_for(self, agent_id: str) -> dict[str, Threshold]:
        """The defaults, with this agent's overrides merged field by field."""
        merged = dict(self.thresholds)
        overrides = self.agents.get(agent_id)
        for dimension, override in (overrides.thresholds if overrides else {}).items():
            base = merged.get(dimension, Threshold())
            merged[dimension] = base.model_copy(update=override.model_dump(exclude_unset=True))
        return merged

    def denied_tools_for(self, agent_id: str) -> list[str]:
        overrides = self.agents.get(agent_id)
        if overrides and overrides.denied_tools is not None:
            return overrides.denied_tools
        return self.policies.denied_tools


def _jsonable(value):
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    return value


def beside_config(config_path: Path | None, path: str) -> Path:
    """A path the config names, relative to the config file (to the working directory without one)."""
    return (config_path.parent if config_path else Path.cwd()) / path


class ConfigError(UserInputError):
    """The config file is unreadable or invalid; the message names the file and the field."""


def load_config(path: Path | None) -> EvalConfig:
    if path is None:
        return EvalConfig()
    try:
        text = path.read_text()
        data = yaml.safe_load(text) if path.suffix in (".yaml", ".yml") else tomllib.loads(text)
        return EvalConfig.model_validate(data or {})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ConfigError(f"config {path}: {where}: {first['msg']}") from exc
    except (OSError, ValueError, yaml.YAMLError) as exc:  # TOMLDecodeError is a ValueError
        raise ConfigError(f"config {path}: {exc}") from exc
