"""`eval-pipeline schemas`: the JSON Schemas of what we read."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from eval_pipeline import jsonout
from eval_pipeline.cli.command import EXIT_OK, Command, UsageError

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", help="one schema; without it, the list")
    parser.add_argument("--json", action="store_true", help="the list as JSON: every schema by name")


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from eval_pipeline.episodes.schemas import SCHEMAS, json_schema

    if args.name:
        if args.name not in SCHEMAS:
            raise UsageError(f"no schema {args.name!r}; known: {', '.join(SCHEMAS)}")
        print(jsonout.dumps(json_schema(args.name), indented=True))
    elif args.json:
        print(jsonout.dumps({name: json_schema(name) for name in SCHEMAS}, indented=True))
    else:
        for name, (_, description) in SCHEMAS.items():
            print(f"{name:<20} {description}")
    return EXIT_OK


COMMAND = Command(
    "schemas",
    "JSON Schemas of the episode, case and input formats we read",
    _arguments,
    _run,
    ("schemas", "schemas episode > episode.schema.json", "schemas --json"),
)
