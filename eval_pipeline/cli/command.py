"""What every command is and shares: its declaration, the exit codes, and the helpers for days and output.

Command modules import only this and the standard library at load time; what a command needs is
imported when it runs, so `eval-pipeline query` does not pay for Dagster.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from eval_pipeline.errors import UserInputError

if TYPE_CHECKING:
    from socketserver import BaseServer

    import pandas as pd

    from eval_pipeline.capture.results import Result
    from eval_pipeline.settings import Settings
    from eval_pipeline.warehouse.connection import Warehouse
    from eval_pipeline.warehouse.rows import Rows

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INFRA = 0, 1, 2, 3


class UsageError(UserInputError):
    """The command line asks for something that cannot be done."""


@dataclass(frozen=True)
class Command:
    """One subcommand: listed once in `eval_pipeline.cli.COMMANDS`, from which the parser is built."""

    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Settings], int]
    examples: tuple[str, ...]
    description: str | None = None


def no_arguments(parser: argparse.ArgumentParser) -> None:
    """For commands that take none."""


def date_argument(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def port_argument(text: str) -> int:
    """A TCP port to listen on (0: any free one); out of range it is the user's typo, not the machine's fault."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"not a port (0-65535): {text!r}")
    return port


def add_days(parser: argparse.ArgumentParser) -> None:
    """`--date D`, or `--start D1 --end D2`: read back with `days`."""
    parser.add_argument("--date", type=date_argument, help="one partition (YYYY-MM-DD)")
    parser.add_argument("--start", type=date_argument, help="first day of a range")
    parser.add_argument("--end", type=date_argument, help="last day of a range (inclusive)")


def days(args: argparse.Namespace, default: date | None = None) -> list[date]:
    """The days the arguments name; `default` when they name none and there is one (`run`: yesterday)."""
    from eval_pipeline.runner import days_between

    if args.date and (args.start or args.end):
        raise UsageError("give --date or --start/--end, not both")
    if args.date:
        return [args.date]
    if default and not (args.start or args.end):
        return [default]
    if not (args.start and args.end):
        raise UsageError("give --date D, or --start D1 --end D2")
    if args.end < args.start:
        raise UsageError(f"--end {args.end} is before --start {args.start}")
    return days_between(args.start, args.end)


def add_results(parser: argparse.ArgumentParser) -> None:
    """A plaited results file, or `--date D [--agent A]` for our stored runs; and `-o`: read back with `results`."""
    parser.add_argument("results", nargs="?", type=Path, help="a plaited CaptureResult or TrialResult JSONL file")
    parser.add_argument("--date", type=date_argument, help="instead of a file: the runs stored for this day")
    parser.add_argument("--agent", help="with --date: only this agent's runs")
    parser.add_argument("-o", "--output", type=Path, help="write to this file instead of printing")


def results(args: argparse.Namespace, settings: Settings) -> tuple[Iterable[Result], str]:
    """The runs `add_results` names, each as plaited shows it (a day's as they are read), and what they are (a page
    says it; a sample is seeded by it)."""
    from eval_pipeline.capture.results import read_results, results_of_captures
    from eval_pipeline.episodes.adapters.plaited import to_capture

    if bool(args.results) == bool(args.date):
        raise UsageError("give a results file, or --date D for the runs stored that day")
    if args.results:
        if args.agent:
            raise UsageError("--agent selects stored runs: give it with --date")
        return read_results(args.results), str(args.results)
    captures = (to_capture(episode) for episode in finished_episodes(settings, args.date, args.agent))
    return results_of_captures(captures), f"runs stored for {args.date}" + (f" by {args.agent}" if args.agent else "")


def span(days: list[date]) -> str:
    """The days as a message names them: the one day, or the range."""
    return str(days[0]) if len(days) == 1 else f"{days[0]}..{days[-1]}"


def check_agent_seen(warehouse: Warehouse, days: list[date], agent_id: str, read: Iterable[str] = ()) -> None:
    """`--agent A` where the days hold no episode of A is a typo more often than a quiet night: say so, naming the
    agents the warehouse holds and those the run `read` in the days' records (it wrote A's alone), exit 2."""
    from eval_pipeline.warehouse.reports import agents_seen

    seen = sorted({*agents_seen(warehouse, days), *read})
    if agent_id not in seen:
        known = ", ".join(seen) if seen else "none"
        raise UsageError(f"--agent {agent_id}: no episode of that agent on {span(days)}; agents there: {known}")


def finished_episodes(settings: Settings, day: date, agent_id: str | None) -> Iterator[dict]:
    """The day's finished episodes (only `agent_id`'s when given) as exports read them, as they are read (`export_inputs`);
    a usage error when there are none, saying why (a day not evaluated, an agent the day does not have), since an empty
    file says nothing."""
    from eval_pipeline.warehouse.export import export_inputs

    warehouse = existing_warehouse(settings, f"run `eval-pipeline run --date {day}` first")
    if agent_id:
        check_agent_seen(warehouse, [day], agent_id)
    episodes = export_inputs(warehouse, day, agent_id)
    first = next(episodes, None)
    if first is None:
        raise UsageError(f"no finished episode stored for {day}; run `eval-pipeline run --date {day}` first")
    return chain([first], episodes)


def grader_command(text: str) -> tuple[str, ...]:
    """A grader as typed (`./grader.py`, `python3 grader.py`), split as a shell would but run without one; an
    element naming a file is made absolute, since the grader runs in a directory of its own."""
    import shlex

    from eval_pipeline.capture.command import anchored

    return anchored(shlex.split(text), lambda part: Path(part).resolve())


def add_store_url(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store-url", metavar="URL", help="read episodes from this episode store (over EVAL_EPISODE_SOURCE)")


def with_store_url(settings: Settings, url: str | None) -> Settings:
    """The settings with `--store-url` as this command's episode source."""
    from eval_pipeline.settings import is_store

    if url is None:
        return settings
    if not is_store(url):
        raise UsageError(f"--store-url must be an http:// or https:// URL, not {url!r}")
    return settings.model_copy(update={"episode_source": url.rstrip("/")})


def existing_warehouse(settings: Settings, first: str = "run `eval-pipeline run` first") -> Warehouse:
    """The warehouse, or a usage error saying what to do `first` when there is none yet."""

    warehouse = settings.warehouse()
    if not warehouse.exists():
        raise UsageError(f"no warehouse at {warehouse.shown}; {first}")
    return warehouse


def obey_interrupts() -> None:
    """Let Ctrl-C and SIGTERM stop this process even where they were inherited as ignored (a job that a script
    started with `&`, or that `make` started in the background).

    Dagster gives SIGTERM whatever SIGINT does, so an ignored SIGINT left a run deaf to a supervisor's stop, and
    every step's compute-log `tail -F`, started with the ignore inherited, made its step wait 30 s and stayed behind.
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread can set handlers; a caller there has its own
    for number in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(number) is signal.SIG_IGN:
            signal.signal(number, signal.default_int_handler)


def serve_until_stopped(server: BaseServer, banner: str) -> int:
    """Serve until Ctrl-C or SIGTERM, then close the socket and end with exit 0.

    The SIGTERM handler is set before `banner` says the server listens, since a supervisor may stop it at
    once; and set at all, since a process `make` starts in the background inherits SIGTERM as ignored."""
    import signal
    import threading

    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print(banner, flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return EXIT_OK


def emit(text: str | Iterable[str], output: Path | None) -> int:
    """Write `text` (or its pieces, as they come) to `output` (saying so; whole or not at all), or print it."""
    if output:
        from eval_pipeline.durable import replace_whole

        replace_whole(output, text)
        print(f"wrote {output}")
    else:
        sys.stdout.writelines([text] if isinstance(text, str) else text)
    return EXIT_OK


def print_other_policy(days: Rows, policy: str) -> None:
    """Days whose baselines another `[baseline] policy` made (`other_policy_days`), and the run that remakes them."""
    first, latest = days.values[0]
    if first is None:
        return
    print(
        f"outdated: the baselines from {first} on were made under another [baseline] policy than {policy!r}; later days "
        f"are compared with them as they are until run again: eval-pipeline run --start {first} --end {latest}"
    )


def print_outdated(days: Rows, file: TextIO | None = None) -> None:
    """Days whose results rest on what earlier days held when they ran (`outdated_days`), and the run that evaluates
    them again."""
    if not days.values:
        return

    def why(episodes: int, findings: int, resolved: int, headline: int) -> str:
        reasons = (
            (episodes, f"{episodes} episode(s) scored against a baseline they no longer have"),
            (findings, f"{findings} finding(s) counted since a day that no longer says so"),
            (resolved, f"{resolved} finding(s) resolved since the day before that its report lists otherwise"),
            (headline, "its headline compares with the day before's figures as they no longer are"),
        )
        return "; ".join(text for n, text in reasons if n)

    listed = ", ".join(f"{day} ({why(*counts)})" for day, *counts in days.values)
    first, last = days.values[0][0], days.values[-1][0]
    again = f"--date {first}" if first == last else f"--start {first} --end {last}"
    print(
        f"outdated: {listed}. Earlier days changed after these ran; their scores, findings and reports stay as they "
        f"were until run again: eval-pipeline run {again}",
        file=file,
    )


def print_table(table: Rows | pd.DataFrame, title: str | None = None, secret_patterns: Iterable[str] = ()) -> None:
    """A rich table on a terminal; plain aligned text when piped, so scripts and logs read it as before.

    The data may be hostile: every text is redacted (the built-in kinds and `secret_patterns`), its control
    characters are shown as escapes rather than sent to the terminal, and none is read as Rich markup."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from eval_pipeline.redaction import redact_each
    from eval_pipeline.warehouse.rows import Rows

    rows = table if isinstance(table, Rows) else Rows.of_frame(table)
    patterns = tuple(secret_patterns)
    console = Console()
    texts = [[_cell(value) for value in row] for row in rows.values]
    distinct = list(dict.fromkeys(chain([title] if title else [], rows.columns, *texts)))  # a listing repeats its agents
    shown_text = dict(zip(distinct, map(_escaped, redact_each(distinct, patterns)), strict=True))
    shown_title = title and shown_text[title]
    if not rows.values:
        print(f"{shown_title}: (no rows)" if shown_title else "(no rows)")
        return
    cells = [[shown_text[text] for text in row] for row in texts]
    headers = [shown_text[column] for column in rows.columns]
    if not console.is_terminal:
        if shown_title:
            print(f"\n{shown_title}")
        print(_aligned(headers, cells))
        return
    shown = Table(title=shown_title and Text(shown_title), title_justify="left", header_style="bold")
    for header, numeric in zip(headers, rows.numeric, strict=True):
        shown.add_column(Text(header), justify="right" if numeric else "left", no_wrap=True)
    for row in cells:
        shown.add_row(*map(Text, row))
    console.print(shown)


_WIDEST_PIPED_CELL = 200


def _aligned(headers: list[str], cells: list[list[str]]) -> str:
    """Columns one space apart, each right-aligned and no cell wider than 200 characters: as pandas' `to_string`
    wrote them before, so what scripts parse stays the same."""
    cut = [[text if len(text) <= _WIDEST_PIPED_CELL else text[: _WIDEST_PIPED_CELL - 3] + "..." for text in row] for row in cells]
    widths = [max(len(header), *(len(row[at]) for row in cut)) for at, header in enumerate(headers)]
    return "\n".join(" ".join(text.rjust(width) for text, width in zip(line, widths, strict=True)) for line in [headers, *cut])


_NOT_FOR_A_TERMINAL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # controls, bidi overrides


def _escaped(text: str) -> str:
    """Each control character as its escape (`\\x1b`, `\\n`): shown, never obeyed."""
    return _NOT_FOR_A_TERMINAL.sub(lambda match: match.group().encode("unicode_escape").decode(), text)


def nested_text(value: list | tuple | dict) -> str:
    """A list or struct as a table or CSV shows it: its JSON (null for NULL, numbers as numbers), not Python's repr
    (`None`, `Decimal('0.5')`), which neither a person nor a CSV reader takes for the SQL value."""
    from eval_pipeline import jsonout

    return jsonout.dumps(value)


def _cell(value: Any) -> str:
    """A value as a table shows it. numpy and pandas values come only from frames, so they are looked up, not
    imported (as `jsonout` does)."""
    if type(value) is str:
        return value  # most cells: nothing to look up
    np, pd = sys.modules.get("numpy"), sys.modules.get("pandas")
    if np is not None and isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, list | tuple | dict):
        return nested_text(value)
    if value is None or (isinstance(value, float) and math.isnan(value)) or (pd is not None and pd.isna(value)):
        return "–"
    if pd is not None and isinstance(value, pd.Timestamp) and value == value.normalize():
        return value.date().isoformat()  # a DATE column, read through pandas
    return str(value)
