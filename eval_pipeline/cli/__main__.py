"""`python -m eval_pipeline.cli`: the same as the installed `eval-pipeline`."""

from eval_pipeline.cli import entry_point

entry_point()
