"""The environment and config as the code location loads them.

Schedules and code versions are fixed when Dagster loads the definitions, so they read the
config here, once; every run still loads it afresh through `EvalConfigResource`.
"""

from importlib.metadata import version

from eval_pipeline.config import load_config
from eval_pipeline.settings import Settings

SETTINGS = Settings.from_environment()
CONFIG = load_config(SETTINGS.config_path)
PACKAGE_VERSION = version("eval_pipeline")
