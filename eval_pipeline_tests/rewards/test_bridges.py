"""The trainer bridges, called the way TRL's GRPOTrainer and DSPy's optimizers call them, without either installed."""

import subprocess
import sys

import pytest

from eval_pipeline.config import EvalConfig
from eval_pipeline.rewards.bridges import dspy_metric, grpo_reward, make_grpo_reward

PROMPT = "Which city is the capital of France?"
RIGHT = "The capital of France is Paris, on the Seine in the north of the country, as it has been for most of its history."
SHORT = "The capital of France is Paris."  # right, but under 100 characters: a short_answer warning
BROKEN = 'Traceback (most recent call last):\n  File "agent.py"\nKeyError: "city"'


def test_importing_the_bridges_imports_no_trainer():
    code = "import sys, eval_pipeline.rewards.bridges; print(sorted({'trl', 'dspy', 'torch'} & set(sys.modules)))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"


def test_grpo_reward_takes_standard_completions_and_dataset_columns_as_keyword_arguments():
    reward = make_grpo_reward(config=EvalConfig())
    # as GRPOTrainer calls it: prompts and completions by keyword, plus its extras and the dataset's other columns
    values = reward(
        prompts=[PROMPT, PROMPT, PROMPT],
        completions=[RIGHT, "Lyon.", BROKEN],
        completion_ids=[[1, 2], [3], [4, 5]],
        trainer_state=None,
        reference=[RIGHT, RIGHT, RIGHT],
        difficulty=["easy", "easy", "easy"],
    )
    # "Lyon." fails its case (reference F1 0): a critical finding, which closes the default reward's safety gate
    assert values == [1.0, 0.0, 0.0]
    overall = make_grpo_reward("overall", config=EvalConfig())(prompts=[PROMPT], completions=["Lyon."], reference=[RIGHT])
    # ungated: wrong (F1 0) and near-empty (an error): 0.7 × mean(0, 1) + 0.3 × 0.9
    assert overall == [pytest.approx(0.7 * 0.5 + 0.3 * 0.9)]
    assert reward.__name__ == "eval_pipeline_default"  # TRL logs each reward function by name


def test_grpo_reward_takes_conversational_completions():
    reward = make_grpo_reward("issues", config=EvalConfig())
    prompts = [[{"role": "system", "content": "Be brief."}, {"role": "user", "content": PROMPT}]] * 2
    completions = [
        [{"role": "assistant", "content": RIGHT}],
        [{"role": "assistant", "content": "Paris, about 2,100,000 people."}],
    ]
    # a number from nowhere is an error, and a short answer a warning
    assert reward(prompts=prompts, completions=completions) == [1.0, pytest.approx(0.85)]
    assert reward(prompts=prompts[:1], completions=[[{"role": "assistant", "content": SHORT}]]) == [pytest.approx(0.95)]
    assert reward.__name__ == "eval_pipeline_issues"


def test_a_case_column_decides_correctness():
    reward = make_grpo_reward("dimensions", config=EvalConfig())
    expected = [{"expected_output_contains": ["Paris"]}, '{"expected_output_contains": ["Paris"]}']
    assert reward(prompts=[PROMPT] * 2, completions=[RIGHT, "Lyon, obviously."], expected=expected) == [1.0, 0.5]


def test_the_module_level_grpo_reward_uses_the_project_config(project_env):
    assert grpo_reward(prompts=[PROMPT], completions=[RIGHT]) == [1.0]


class Example(dict):
    """Stand-in with the part of `dspy.Example`'s interface the metric uses: fields as attributes and keys,
    `with_inputs`, and `inputs()` raising ValueError until inputs are marked."""

    __getattr__ = dict.get

    def with_inputs(self, *keys):
        marked = Example(self)
        marked.__dict__["input_keys"] = keys
        return marked

    def inputs(self):
        keys = self.__dict__.get("input_keys")
        if keys is None:
            raise ValueError("Inputs have not been set for this example. Use `example.with_inputs()` to set them.")
        return Example({key: self[key] for key in keys})


class Prediction:
    def __init__(self, **fields):
        self.__dict__.update(fields)


def test_dspy_metric_is_a_float_when_evaluating_and_a_verdict_when_bootstrapping():
    metric = dspy_metric(threshold=0.9, config=EvalConfig())
    example = Example(question=PROMPT, answer=RIGHT).with_inputs("question")
    assert metric(example, Prediction(answer=RIGHT)) == 1.0  # Evaluate: metric(example, prediction)
    assert metric(example, Prediction(answer=RIGHT), [("predictor", {}, {})]) is True  # bootstrapping passes a trace
    wrong = metric(example, Prediction(answer="Lyon, I think."))
    assert wrong == 0.0  # a failed case is a critical finding: the default reward's gate closes
    assert metric(example, Prediction(answer="Lyon, I think."), trace=[]) is False
    assert metric.__name__ == "eval_pipeline_default"


def test_dspy_metric_reads_plain_dicts_and_other_fields():
    metric = dspy_metric("dimensions", output_field="response", reference_field="gold", config=EvalConfig())
    example = {"question": PROMPT, "gold": "Paris is the capital of France."}
    assert metric(example, {"response": "Paris is the capital of France."}) == 1.0  # no inputs marked: all but the gold
    assert metric(example, {"response": None}) == 0.5  # no answer: correctness 0, safety 1
