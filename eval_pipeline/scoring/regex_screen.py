"""A looser RE2 form of a Python regular expression, to rule out in bulk the texts it cannot find a match in.

Python's `re` reads long tool outputs slowly for patterns that give it no literal to skip ahead to (the `no_data`
patterns, a `\\b` and IGNORECASE: some 20 MB/s); RE2 (DuckDB's `regexp_matches`, Arrow's) reads them 20 to 30 times
faster. The two engines differ (Unicode classes and case folding, `$` before a final newline; RE2 has no look-around
or back-reference), so RE2 never decides a match: it rules texts out. `screen` makes from a Python pattern an RE2
expression that matches every text the pattern does, and maybe more; a text the screen does not match is settled,
and Python's `re` reads only the others, so the answers are Python's own. The screen is looser wherever the engines
could disagree: a word boundary or a look-around asserts nothing; a back-reference matches any text; `^` and `$` match
at the start of the text and at the end of any line; a negated class, `.` and `\\S`, `\\W`, `\\D` match any character
outside ASCII. Any other character or class matches exactly the characters Python's `re` matches it with, asked of
Python's `re` itself: a text in another script is ruled out as an English one is.
"""

from __future__ import annotations

import re
from functools import cache
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_ASCII = [chr(code) for code in range(128)]
_NOT_ASCII = r"\x{80}-\x{10ffff}"
_NOTHING = r"[^\x{0}-\x{10ffff}]"
_RE2_MAX_REPEAT = 1_000  # RE2 refuses a count above it
_NEGATED_CATEGORIES = (sre.CATEGORY_NOT_DIGIT, sre.CATEGORY_NOT_SPACE, sre.CATEGORY_NOT_WORD)
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
        return _character(*_construct(op, argument), flags)
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


# What a character's construct is asked about outside ASCII, narrowest first: "case" (it holds ASCII characters only:
# those a case-insensitive match can reach, `_case_partners`), "scan" (a category, or a character outside ASCII: every
# one) or "all" (a negated one: any of them passes, as asking would list most of Unicode)
_REACHES = ("case", "scan", "all")


def _construct(op: object, argument: Any) -> tuple[str, str]:
    """One character's construct as Python pattern text again, and what it is asked about outside ASCII (`_REACHES`)."""
    if op is sre.LITERAL:
        return re.escape(chr(argument)), "case" if argument < 0x80 else "scan"
    if op is sre.NOT_LITERAL:
        return f"[^{re.escape(chr(argument))}]", "all"
    if op is sre.ANY:
        return ".", "all"
    members: list[str] = []
    reaches = ["case"]
    for kind, value in argument:
        if kind is sre.NEGATE:
            members.insert(0, "^")
            reaches.append("all")
        elif kind is sre.LITERAL or kind is sre.RANGE:
            low, high = (value, value) if kind is sre.LITERAL else value
            members.append(re.escape(chr(low)) + (f"-{re.escape(chr(high))}" if kind is sre.RANGE else ""))
            reaches.append("case" if high < 0x80 else "scan")
        elif kind is sre.CATEGORY and value in _CATEGORIES:
            members.append(_CATEGORIES[value])
            reaches.append("all" if value in _NEGATED_CATEGORIES else "scan")
        else:
            raise _Untranslatable(kind)
    return f"[{''.join(members)}]", max(reaches, key=_REACHES.index)


@cache
def _character(source: str, reach: str, flags: int) -> str:
    """An RE2 class of the characters Python's `re` matches `source` with, under `flags`: those of ASCII and those
    beyond it that `reach` says to ask about, or every one beyond it."""
    single = re.compile(source, flags & ~re.VERBOSE)
    codes = [ord(character) for character in _ASCII if single.fullmatch(character)]
    if reach != "all":
        beyond = _case_partners() if reach == "case" else _beyond_ascii()
        codes += sorted({ord(character) for character in single.findall(beyond)})
    runs: list[list[int]] = []
    for code in codes:
        if runs and runs[-1][1] == code - 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    members = "".join(rf"\x{{{a:02x}}}" if a == b else rf"\x{{{a:02x}}}-\x{{{b:02x}}}" for a, b in runs)
    return "[" + members + (_NOT_ASCII if reach == "all" else "") + "]" if members or reach == "all" else _NOTHING


@cache
def _beyond_ascii() -> str:
    """Every character outside ASCII (but the surrogates, which no text holds), as one text to search."""
    codes = np.concatenate([np.arange(0x80, 0xD800), np.arange(0xE000, 0x110000)]).astype("<u4")
    return codes.tobytes().decode("utf-32-le")


@cache
def _case_partners() -> str:
    """The characters outside ASCII that Python's IGNORECASE matches with one of ASCII (the Kelvin sign with k, the
    long s with s, İ and ı with i): all that a construct of ASCII characters can match beyond ASCII."""
    return "".join(re.findall(r"(?i)[\x00-\x7f]", _beyond_ascii()))
