"""A looser RE2 form of a Python regular expression, to rule out in bulk the texts it cannot find a match in.

Python's `re` reads long tool outputs slowly for patterns that give it no literal to skip ahead to (the `no_data`
patterns, a `\\b` and IGNORECASE: some 20 MB/s); RE2 (DuckDB's `regexp_matches`, Arrow's) reads them 20 to 30 times
faster. The two engines differ (Unicode classes and case folding, `$` before a final newline; RE2 has no look-around
or back-reference), so RE2 never decides a match: it rules texts out. `screen` makes from a Python pattern an RE2
expression that matches every text the pattern does, and maybe more; a text the screen does not match is settled,
and Python's `re` reads only the others, so the answers are Python's own. The screen is looser wherever the engines
could disagree: a character matches the ASCII characters Python's `re` says it does and any character outside ASCII
(text mostly outside ASCII passes, and is read by Python); a word boundary or a look-around asserts nothing; a
back-reference matches any text; `^` and `$` match at the start of the text and at the end of any line.
"""

from __future__ import annotations

import re
from functools import cache
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

_ASCII = [chr(code) for code in range(128)]
_NOT_ASCII = r"\x{80}-\x{10ffff}"
_RE2_MAX_REPEAT = 1_000  # RE2 refuses a count above it
_CATEGORIES = {
    sre.CATEGORY_DIGIT: r"\d", sre.CATEGORY_NOT_DIGIT: r"\D", sre.CATEGORY_SPACE: r"\s",
    sre.CATEGORY_NOT_SPACE: r"\S", sre.CATEGORY_WORD: r"\w", sre.CATEGORY_NOT_WORD: r"\W",
}  # fmt: skip


class _Untranslatable(Exception):
    """A construct the screen has no looser form for."""


def screen(pattern: re.Pattern[str]) -> str:
    """An RE2 expression that finds a match in at least the texts `pattern.search` does; "" (every text) where none can
    be made."""
    return _screen(pattern.pattern, pattern.flags)


@cache
def _screen(pattern: str, flags: int) -> str:
    parsed = sre_parse.parse(pattern, flags)
    try:
        loose = _sequence(parsed, parsed.state.flags)
        pc.match_substring_regex(pa.array([""]), loose)  # RE2 compiles it (Arrow's, as DuckDB's), or refuses it as too large
    except (_Untranslatable, pa.ArrowInvalid):
        return ""
    return loose


def _sequence(items: Any, flags: int) -> str:  # the parser's `SubPattern`, or a list of its items
    return "".join(_item(op, argument, flags) for op, argument in items)


def _item(op: object, argument: Any, flags: int) -> str:
    if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN):
        return _character(_source(op, argument), flags)
    if op is sre.BRANCH:
        _, branches = argument
        return "(?:" + "|".join(_sequence(branch, flags) for branch in branches) + ")"
    if op is sre.SUBPATTERN:
        _, added, removed, items = argument
        return "(?:" + _sequence(items, (flags | added) & ~removed) + ")"
    if op is sre.ATOMIC_GROUP:
        return "(?:" + _sequence(argument, flags) + ")"
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
        least, most, items = argument
        return f"(?:{_sequence(items, flags)}){_count(least, most)}"
    if op is sre.AT:
        if argument is sre.AT_BEGINNING and not flags & re.MULTILINE:
            return r"\A"
        return _AT.get(argument, "")
    if op in (sre.ASSERT, sre.ASSERT_NOT):
        return ""
    if op is sre.GROUPREF:
        return r"(?s:.*)"
    if op is sre.GROUPREF_EXISTS:
        _, yes, no = argument
        return "(?:" + _sequence(yes, flags) + "|" + (_sequence(no, flags) if no else "") + ")"
    raise _Untranslatable(op)


# Python's `^` with MULTILINE (start of a line; without, the start of the text: `\A`) and `$` (end of the text or
# before its final newline, or of a line): RE2's start of a line and end of any line hold at least there. A word
# boundary asserts nothing.
_AT = {
    sre.AT_BEGINNING: "(?m:^)", sre.AT_BEGINNING_STRING: r"\A", sre.AT_END: "(?m:$)", sre.AT_END_STRING: r"\z",
}  # fmt: skip


def _count(least: int, most: int) -> str:
    least = min(least, _RE2_MAX_REPEAT)
    if most > _RE2_MAX_REPEAT:  # MAXREPEAT among them: no bound
        return f"{{{least},}}"
    return f"{{{least},{most}}}"


def _source(op: object, argument: Any) -> str:
    """One character's construct as Python pattern text again."""
    if op is sre.LITERAL:
        return re.escape(chr(argument))
    if op is sre.NOT_LITERAL:
        return f"[^{re.escape(chr(argument))}]"
    if op is sre.ANY:
        return "."
    members: list[str] = []
    for kind, value in argument:
        if kind is sre.NEGATE:
            members.insert(0, "^")
        elif kind is sre.LITERAL:
            members.append(re.escape(chr(value)))
        elif kind is sre.RANGE:
            members.append(f"{re.escape(chr(value[0]))}-{re.escape(chr(value[1]))}")
        elif kind is sre.CATEGORY and value in _CATEGORIES:
            members.append(_CATEGORIES[value])
        else:
            raise _Untranslatable(kind)
    return f"[{''.join(members)}]"


@cache
def _character(source: str, flags: int) -> str:
    """An RE2 class of the ASCII characters Python's `re` matches `source` with, under `flags`, and of every other."""
    single = re.compile(source, flags & ~re.VERBOSE)
    codes = [ord(character) for character in _ASCII if single.fullmatch(character)]
    runs: list[list[int]] = []
    for code in codes:
        if runs and runs[-1][1] == code - 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    return "[" + "".join(rf"\x{{{a:02x}}}" if a == b else rf"\x{{{a:02x}}}-\x{{{b:02x}}}" for a, b in runs) + _NOT_ASCII + "]"
