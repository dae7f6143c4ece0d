"""What users copy runs as written: the command lines of `--help` and the README's shell blocks parse, its TOML loads."""

import contextlib
import io
import re
import shlex

import pytest

from eval_pipeline.cli import COMMANDS, build_parser
from eval_pipeline.config import load_config
from eval_pipeline.settings import PROJECT_ROOT

README = (PROJECT_ROOT / "README.md").read_text()


def _argv(line: str) -> list[str]:
    """The arguments of `eval-pipeline` on a shell line: its comment, what follows `&`, `|` or `;`, a redirect dropped."""
    words = shlex.split(line[line.index("eval-pipeline ") :], comments=True)
    for index, word in enumerate(words):
        if word in ("&", "&&", "|", ";", ">", ">>"):
            return words[1:index]
    return words[1:]


def _parse_error(line: str) -> str | None:
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            build_parser().parse_args(_argv(line))
    except SystemExit as exc:
        return stderr.getvalue().strip() if exc.code else None
    return None


HELP_EXAMPLES = [f"eval-pipeline {example}" for command in COMMANDS for example in command.examples]
README_SHELL_LINES = [
    line for block in re.findall(r"```bash\n(.*?)```", README, re.S) for line in block.splitlines() if "eval-pipeline " in line
]


@pytest.mark.parametrize("line", HELP_EXAMPLES + README_SHELL_LINES)
def test_every_command_line_shown_parses_as_typed(line):
    assert _parse_error(line) is None


@pytest.mark.parametrize("index", range(len(re.findall(r"```toml\n", README))))
def test_every_eval_toml_snippet_loads(index, tmp_path):
    snippet = re.findall(r"```toml\n(.*?)```", README, re.S)[index]
    if snippet.startswith("[project."):  # a pyproject.toml's entry points, not eval.toml
        return
    (tmp_path / "eval.toml").write_text(snippet)
    load_config(tmp_path / "eval.toml")


def test_eval_toml_documents_every_setting_with_its_default():
    """The README sends users to eval.toml for every setting: each field of each section is there, set or commented,
    and what it sets is the code's default."""
    from pydantic import BaseModel

    from eval_pipeline.config import EvalConfig

    text = (PROJECT_ROOT / "eval.toml").read_text()
    assert load_config(PROJECT_ROOT / "eval.toml") == EvalConfig()
    missing = []
    for section, field in EvalConfig.model_fields.items():
        model = field.annotation
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            continue
        body = re.search(rf"^\[{section}\]\n(.*?)(?=^\[(?!{section}[.\]])|\Z)", text, re.S | re.M)
        assert body, f"[{section}] is not in eval.toml"
        for name, setting in model.model_fields.items():
            key = setting.alias or name
            if not re.search(rf"^#?\s*(?:{key}\s*=|\[+{section}\.{key}\b)", body.group(1), re.M):
                missing.append(f"[{section}] {key}")
    assert missing == []
