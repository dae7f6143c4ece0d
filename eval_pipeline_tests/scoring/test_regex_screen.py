"""The RE2 screen rules texts out, never in: Python's `re` has the last word on every match."""

from __future__ import annotations

import random
import re

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from eval_pipeline.config import DEFAULT_NO_DATA_PATTERNS
from eval_pipeline.scoring.checks.no_data import _no_data
from eval_pipeline.scoring.regex_screen import _case_partners, screen

# Where Python's `re` and RE2 read a pattern apart: Unicode classes and case folding (the Kelvin sign is a `k`, the
# long s an `s`, a no-break space is `\s`), `$` before a final newline, word boundaries next to letters outside ASCII,
# and what RE2 has no form for (look-around, back-references, conditionals, atomic groups, large counts).
PATTERNS = [
    *DEFAULT_NO_DATA_PATTERNS,
    "|".join(f"(?:{pattern})" for pattern in DEFAULT_NO_DATA_PATTERNS),
    r"(?m)^\s*none$",
    r"none$\n",
    r"\Anull\Z",
    r"\bstrasse\b",
    r"straße",
    r"(?-i:No) data",
    r"(?<=x)y",
    r"(?<!a)b\b",
    r"(?=no)n(?!x)",
    r"(['\"])\w+\1",
    r"(?P<q>\d)-(?P=q)",
    r"(x)?(?(1)y|z)",
    r"(?>ab|a)b",
    r"a++b",
    r"(?:ab){2,1200}",
    r"a{1001}",
    r"(?s)no.data",
    r"no.data",
    r"[^\w\s]{2}",
    r"[\W\d]+z",
    r"\d{2,}",
    r"\S+@\S+",
    r"[é-ÿ]x",
    r"[^a-z]k",
    "\u212a",
    r"(?a)\w+\b",
    r"(?x) n o \s d a t a  # spaced out",
    r"0 results?",
    r"",
]
PIECES = [
    "no data", "No Data", "NO\u00a0DATA", "n\u00f6 data", "\u212a", "ſ", "İ", "ı", "not found", "not\u2028found",
    "0 results", "zero rows", "[]", "[ ]", "{}", "null", "None", "none", " ", "\n", "\t", "\u3000", "\x85", "\x1c",
    "abc", "é", "日本", "😀", "x", "y", "z", "1", "11", "_", "-", "@", "'", '"', "ab", "strasse", "STRASSE", "straße",
    "k", "K", "s", "a", "b", "cb ", "abb", "1-1", "'ab'", "No data",
]  # fmt: skip


def _texts(count: int, seed: int = 7) -> list[str]:
    draw = random.Random(seed)
    texts = ["".join(draw.choices(PIECES, k=draw.randint(0, 6))) for _ in range(count)]
    return texts + [text + "\n" for text in texts[:200]] + ["", "\n", "none\n", "none\n\n", "x" * 1001 + "a" * 1001]


def _passed(texts: list[str], loose: str) -> list[bool]:
    """Which of `texts` the screen lets through, as the checks' reading applies it: DuckDB's `regexp_matches`."""
    with duckdb.connect() as con:
        rows = con.execute(
            "SELECT regexp_matches(text, $loose) FROM (SELECT unnest($texts) AS text)", {"loose": loose, "texts": texts}
        )
        return [passed for (passed,) in rows.fetchall()]


@pytest.mark.parametrize("flags", [0, re.IGNORECASE, re.IGNORECASE | re.MULTILINE | re.DOTALL])
def test_every_text_python_matches_passes_the_screen(flags):
    texts = _texts(3_000)
    for pattern in PATTERNS:
        compiled = re.compile(pattern, flags)
        loose = screen(compiled)
        missed = [
            text for text, through in zip(texts, _passed(texts, loose), strict=True) if compiled.search(text) and not through
        ]
        assert not missed, (pattern, flags, loose, missed[:5])
        assert any(map(compiled.search, texts))  # the property is not held by matching nothing


def test_pages_without_a_match_are_ruled_out():
    """Fetched pages under the default `no_data` patterns, in words that come near a match ("no.", "0-rows", "réel"), and
    pages in other scripts: RE2 settles them; Python's `re` reads only the rest."""
    no_data = _no_data(tuple(DEFAULT_NO_DATA_PATTERNS))
    draw = random.Random(3)
    words = ["the", "order", "no.", "data", "rows,", "found.", "réel", "none", "{", "}", "nothing", "zero-results", "0-rows"]
    russian = ["заказ", "возврат", "счёт", "отправлен", "нет", "данных", "не", "найдено", "0"]
    japanese = ["注文", "返金", "請求書", "発送済み", "データなし", "見つかりません"]
    pages = [" ".join(draw.choices(script, k=2_000)) for script in (words, russian, japanese) for _ in range(20)]
    pages += ["No data returned", "[]", "n\u00f6 data", "\u212a", "ze\u0280o rows"]
    passed = _passed(pages, screen(no_data))
    assert [index for index, through in enumerate(passed) if through] == [60, 61]
    assert [bool(no_data.search(page)) for page in pages[60:]] == [True, True, False, False, False]


@pytest.mark.parametrize("flags", [0, re.IGNORECASE, re.IGNORECASE | re.DOTALL, re.ASCII | re.IGNORECASE])
def test_each_character_of_the_screen_holds_every_character_python_matches_it_with(flags):
    """Over every code point: a character or class of the screen lets through each one Python's `re` matches it with,
    and, but for a negated one, no other."""
    every = "".join(chr(code) for code in [*range(0xD800), *range(0xE000, 0x110000)])
    characters = pa.array(list(every))
    for source in [*"azAZ09 _-KSIik", "é", "\u212a", "ſ", "İ", r"\s", r"\w", r"\d", r"[\s\d]", r"[a-f]", r"[é-ÿ]", r"[^a-z]",
                   r"\S", r"\W", r"\D", "."]:  # fmt: skip
        compiled = re.compile(source, flags)
        loose = screen(compiled)
        held = pc.match_substring_regex(characters, f"^{loose}$").to_numpy(zero_copy_only=False)
        codes = np.array([ord(character) for character in compiled.findall(every)], dtype=np.int64)
        python_held = np.zeros(len(characters), dtype=bool)
        python_held[np.where(codes >= 0xE000, codes - 0x800, codes)] = True  # `every` skips the surrogates
        assert not (python_held & ~held).any(), (source, flags)
        if not (source.startswith("[^") or source in (r"\S", r"\W", r"\D", ".")):
            assert (held == python_held).all(), (source, flags, np.flatnonzero(held != python_held)[:5])


def test_a_pattern_re2_cannot_hold_lets_every_text_through():
    """A program past RE2's size has no screen: the empty expression, which every text passes."""
    heavy = re.compile(r"(?:(?:[a-z]{1000}){1000})|no data", re.IGNORECASE)
    assert screen(heavy) == ""
    assert _passed(["No data", "data", ""], screen(heavy)) == [True, True, True]


def test_an_ascii_character_reaches_beyond_ascii_only_its_case_partners():
    """What a literal or class of ASCII characters is asked about beyond ASCII (`_case_partners`) holds every
    character Python's IGNORECASE matches any ASCII character with."""
    beyond = "".join(chr(code) for code in [*range(0x80, 0xD800), *range(0xE000, 0x110000)])
    partners = set(_case_partners())
    for code in range(0x80):
        assert set(re.findall(re.escape(chr(code)), beyond, re.IGNORECASE)) <= partners, chr(code)
    assert partners == {"\u0130", "\u0131", "\u017f", "\u212a"}  # İ, ı, the long s, the Kelvin sign
