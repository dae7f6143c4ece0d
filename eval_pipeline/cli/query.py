"""`eval-pipeline query`: read-only SQL over the warehouse."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from eval_pipeline import jsonout
from eval_pipeline.cli.command import EXIT_OK, Command, UsageError, existing_warehouse, print_table

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings
    from eval_pipeline.warehouse.rows import Rows


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sql")
    parser.add_argument("--format", choices=["table", "csv", "json"], default="table")


def _run(args: argparse.Namespace, settings: Settings) -> int:
    import duckdb

    from eval_pipeline.config import load_config
    from eval_pipeline.warehouse.query import run_read_only

    warehouse = existing_warehouse(settings, "run `eval-pipeline demo` or `eval-pipeline run` first")
    try:
        rows = run_read_only(warehouse, args.sql)
    except duckdb.Error as exc:
        raise UsageError(str(exc).splitlines()[0]) from None
    if args.format == "csv":
        _write_csv(rows)
    elif args.format == "json":
        print(jsonout.dumps(rows.records()))
    else:
        print_table(rows, secret_patterns=load_config(settings.config_path).policies.secret_patterns)
    return EXIT_OK


def _write_csv(rows: Rows) -> None:
    """RFC 4180 with a header; NULL and NaN are empty fields, a DATE is YYYY-MM-DD, a list or struct its JSON."""
    import csv
    import math

    from eval_pipeline.cli.command import nested_text

    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(rows.columns)
    for row in rows.values:
        writer.writerow(
            "" if isinstance(value, float) and math.isnan(value) else nested_text(value) if isinstance(value, list | dict)
            else value
            for value in row
        )  # fmt: skip


COMMAND = Command(
    "query",
    "read-only SQL over the warehouse",
    _arguments,
    _run,
    (
        'query "SELECT * FROM agent_daily ORDER BY partition_date DESC LIMIT 20"',
        'query "SELECT dimension, count(*) FROM latest_findings GROUP BY ALL" --format csv',
    ),
)
