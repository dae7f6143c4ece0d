"""Trainer bridges: our rewards in the shapes TRL's GRPO trainer and DSPy's optimizers call.

Neither library is imported, so both work (and are tested) without them installed. Both score
single turns through the same scorers and reward functions as the pipeline (`rewards.online`):
prompt and completion become a one-step run; a `reference` or case (`expected`) decides
correctness, otherwise the reward rests on safety and the checks' issues.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from typing import Any

from eval_pipeline.config import EvalConfig, beside_config, load_config
from eval_pipeline.rewards.online import online_rewards, pair_episode
from eval_pipeline.scoring.cases import Case, load_cases


@cache
def _project_config() -> tuple[EvalConfig, dict[str, Case]]:
    """The config `EVAL_CONFIG` (or the project's eval.toml) names, and its cases file, read once."""
    from eval_pipeline.settings import Settings

    settings = Settings.from_environment()
    config = load_config(settings.config_path)
    cases = load_cases(beside_config(settings.config_path, config.cases.path) if config.cases.path else None)
    return config, cases


def _expected(expected: Any, reference: Any) -> dict | None:
    """A dataset row's case: its `expected` column (a dict or JSON text), with its `reference` column added."""
    case = json.loads(expected) if isinstance(expected, str) else dict(expected or {})
    if reference is not None:
        case.setdefault("reference", str(reference))
    return case or None


def rewards_of_pairs(
    prompts: list,
    completions: list,
    expected: list | None = None,
    reward_name: str | None = None,
    config: EvalConfig | None = None,
) -> list[float | None]:
    """The reward of each prompt/completion pair, in order; None where the reward has nothing to weigh."""
    config, cases = (config, {}) if config is not None else _project_config()
    name = reward_name or config.rewards.default
    episodes = [pair_episode(p, c, e) for p, c, e in zip(prompts, completions, expected or [None] * len(prompts), strict=True)]
    return [reward.value for reward in online_rewards(episodes, name, config, cases)]


def make_grpo_reward(reward_name: str | None = None, config: EvalConfig | None = None) -> Callable[..., list[float | None]]:
    """A reward function for `trl.GRPOTrainer(reward_funcs=[...])`, named after the reward (TRL logs it by name).

    TRL calls it as `f(prompts=[...], completions=[...], **columns)`, where `columns` are the dataset's
    other columns as lists plus its own extras (`completion_ids`, `trainer_state`, ...). Prompts and
    completions are strings, or lists of `{"role", "content"}` messages for conversational datasets. A
    `reference` column (text) or an `expected` column (a case, as dict or JSON) decides correctness; other
    columns are ignored. None (no value) is what TRL expects of a reward that does not apply to a sample.
    """

    def grpo_reward(prompts: list, completions: list, **kwargs: Any) -> list[float | None]:
        references = kwargs.get("reference") or [None] * len(prompts)
        expected = kwargs.get("expected") or [None] * len(prompts)
        cases = [_expected(e, r) for e, r in zip(expected, references, strict=True)]
        return rewards_of_pairs(prompts, completions, cases, reward_name, config)

    grpo_reward.__name__ = f"eval_pipeline_{reward_name or 'default'}"
    return grpo_reward


grpo_reward = make_grpo_reward()  # the default reward of the project's config (read on first call)


def _field(record: Any, name: str) -> Any:
    if isinstance(record, dict):
        return record.get(name)
    return getattr(record, name, None) if not isinstance(record, str) else None


def _prompt(example: Any, reference_field: str) -> str:
    """A DSPy example's input fields as text (`example.inputs()` when its inputs are marked, else all but the reference)."""
    try:
        fields = dict(example.inputs())
    except (AttributeError, ValueError):  # a dict, or an Example without `with_inputs(...)`
        fields = dict(example.items()) if hasattr(example, "items") else {}
        fields.pop(reference_field, None)
    return "\n".join(str(value) for value in fields.values())


def dspy_metric(
    reward_name: str | None = None,
    threshold: float = 0.5,
    output_field: str = "answer",
    reference_field: str = "answer",
    config: EvalConfig | None = None,
) -> Callable[..., float | bool]:
    """A DSPy metric `(example, prediction, trace=None)`: the reward as a float when evaluating (trace is
    None), and `reward >= threshold` when an optimizer bootstraps demonstrations (trace given), as DSPy's
    convention goes. The completion is `prediction.<output_field>`; `example.<reference_field>` is the
    reference answer and `example.expected` a case. A run the reward cannot score counts as 0.0 (not good).
    """

    def metric(example: Any, prediction: Any, trace: Any = None) -> float | bool:
        completion = prediction if isinstance(prediction, str) else _field(prediction, output_field)
        case = _expected(_field(example, "expected"), _field(example, reference_field))
        (value,) = rewards_of_pairs([_prompt(example, reference_field)], [str(completion or "")], [case], reward_name, config)
        score = value if value is not None else 0.0
        return score if trace is None else score >= threshold

    metric.__name__ = f"eval_pipeline_{reward_name or 'default'}"
    return metric
