"""Checks and adapters from the user's own package, under the contract the built-in ones have.

A plug-in check is a `scoring.checks.Check`; a plug-in adapter is a module (or any object) with an
adapter's `NAME`, `detect` and `convert` (and optionally `days`), as `episodes.adapters.Adapter`
says. Either comes in two ways, and is listed into the same registry as the built-in ones:

- an installed package's entry points, in the groups `eval_pipeline.checks` and
  `eval_pipeline.adapters` (`too_polite = "my_pkg.checks:TOO_POLITE"`, `minilog = "my_pkg.minilog"`);
- `eval.toml`: `[checks] plugins` and `[sources] plugins`, each a `module` or `module:attribute`; the
  module is looked for beside the config first, so a file there needs no install and no PYTHONPATH.

A plug-in that cannot be imported, is not what its list promises, or takes a name already taken is
a config error (exit 2), said before any run starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING

from eval_pipeline.config import ConfigError, EvalConfig
from eval_pipeline.episodes.adapters import ADAPTERS, Adapter
from eval_pipeline.imports import import_beside

if TYPE_CHECKING:  # the checks (numpy) are imported by what runs them, not by `status`, which reads the adapters
    from eval_pipeline.scoring.checks import Check

CHECKS_GROUP = "eval_pipeline.checks"
ADAPTERS_GROUP = "eval_pipeline.adapters"


class PluginError(ConfigError):
    """A plug-in cannot be loaded; the message names it, where it was listed and why."""


def _import(reference: str, home: Path | None) -> object:
    module, _, attribute = reference.partition(":")
    try:
        loaded: object = import_beside(module, home)
        for name in filter(None, attribute.split(".")):
            loaded = getattr(loaded, name)
    except Exception as exc:  # anything the user's module raises on import is theirs to fix
        raise PluginError(f"cannot import {reference!r}: {type(exc).__name__}: {exc}") from exc
    return loaded


def _installed(group: str) -> list[tuple[str, object]]:
    """(where it was declared, the object) of each entry point in `group`."""
    found = []
    for point in entry_points(group=group):
        where = f"entry point {point.name} = {point.value!r} ({group})"
        try:
            found.append((where, point.load()))
        except Exception as exc:
            raise PluginError(f"cannot load {where}: {type(exc).__name__}: {exc}") from exc
    return found


def _listed(references: list[str], section: str, config_path: Path | None) -> list[tuple[str, object]]:
    home = config_path.parent if config_path else None
    return [(f"{reference!r} in [{section}] plugins", _import(reference, home)) for reference in references]


def plugin_checks(config: EvalConfig, config_path: Path | None) -> list[Check]:
    from eval_pipeline.scoring.checks import Check

    plugins = []
    for where, plugin in _installed(CHECKS_GROUP) + _listed(config.checks.plugins, "checks", config_path):
        if not isinstance(plugin, Check):
            raise PluginError(f"{where} is a {type(plugin).__name__}, not a Check (eval_pipeline.scoring.checks.Check)")
        plugins.append(plugin)
    return plugins


def checks(config: EvalConfig, config_path: Path | None, names: Sequence[str] | None = None) -> tuple[Check, ...]:
    """The checks a run runs: those `names` picks among the built-in ones and the plug-ins (all of them without)."""
    from eval_pipeline.scoring.checks import registry, select

    return select(registry(plugin_checks(config, config_path)), names)


def adapters(config: EvalConfig, config_path: Path | None) -> tuple[Adapter, ...]:
    """Every adapter, plug-ins first: a file's format is the first whose `detect` claims it, so a plug-in can
    read a format a built-in one would misread."""
    plugins: list[Adapter] = []
    for where, plugin in _installed(ADAPTERS_GROUP) + _listed(config.sources.plugins, "sources", config_path):
        if not isinstance(plugin, Adapter) or not isinstance(plugin.NAME, str):
            raise PluginError(f"{where} is not an adapter: it needs a NAME, detect(record) and convert(records, agent_id, day)")
        if plugin.NAME in {adapter.NAME for adapter in (*plugins, *ADAPTERS)}:
            raise PluginError(f"{where} is named {plugin.NAME!r}, as another adapter is: give it a name of its own")
        plugins.append(plugin)
    return (*plugins, *ADAPTERS)
