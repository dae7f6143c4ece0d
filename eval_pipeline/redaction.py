"""Secrets that agents leak: one declaration finds them for scoring and hides them in every output.

The kinds below always apply; `[policies] secret_patterns` adds a project's own. A secret split by a
zero-width character or a line break reads whole to a person, so each text is matched twice: with
invisible characters removed, and with line breaks inside a token removed too.
"""

from __future__ import annotations

import re
import sys
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from typing import Any, TypeVar

T = TypeVar("T")

HIDDEN = "…[redacted]"  # what replaces a secret; the text a pattern keeps around it says which kind it was


@dataclass(frozen=True)
class SecretKind:
    """A kind of secret. `pattern` finds one; its group `secret`, else the whole match, is hidden, so what the
    pattern keeps around it (`sk-`, `password=`, a URL's user and host) stays readable.

    Patterns are case-sensitive, as vendors print their keys (`(?i:...)` where the case varies). A `standalone`
    kind is not glued to a letter or digit before it: `task-…` holds no `sk-` key, `lookup_ghp_…` a GitHub token."""

    name: str
    pattern: str
    cue: str  # a regex every match holds, lower case: a text without any kind's cue is not searched for these kinds
    # (`sk-` with its 16 characters: ids such as `task-0042` hold `sk-` but not a key's length)
    standalone: bool = True


_ASSIGNED = r"""["']?\s*[:=]\s*["']?"""  # password=..., "password": "...", password: ...
_VALUE = r"""[^\s"'&;,<>]"""  # a value's characters, up to a quote, space or separator
_TOKEN = r"[A-Za-z0-9/+=_\-.~]"
SECRET_KINDS: tuple[SecretKind, ...] = (
    # many vendors' keys too (sk-ant-, ...)
    SecretKind("OpenAI-style API key", cue=r"sk-[a-z0-9_\-]{16}", pattern=r"sk-(?P<secret>[A-Za-z0-9_\-]{16,})"),
    SecretKind("Stripe key", cue="k_(?:live|test)_", pattern=r"[rs]k_(?:live|test)_(?P<secret>[A-Za-z0-9]{10,})"),
    SecretKind("AWS access key id", cue="akia|asia", pattern=r"(?:AKIA|ASIA)(?P<secret>[A-Z0-9]{16})(?![A-Za-z0-9])"),
    SecretKind("GitHub token", cue="gh[pousr]_|github_pat_", pattern=r"(?:gh[pousr]_|github_pat_)(?P<secret>[A-Za-z0-9_]{22,})"),
    SecretKind("GitLab token", cue="glpat-", pattern=r"glpat-(?P<secret>[A-Za-z0-9_\-]{20,})"),
    SecretKind("Hugging Face token", cue="hf_", pattern=r"hf_(?P<secret>[A-Za-z0-9]{30,})"),
    SecretKind("npm token", cue="npm_", pattern=r"npm_(?P<secret>[A-Za-z0-9]{36})"),
    SecretKind("Slack token", cue="xox[abposr]-", pattern=r"xox[abposr]-(?P<secret>[A-Za-z0-9\-]{10,})"),
    SecretKind(
        "chat webhook URL",  # the path is the credential
        cue=r"hooks\.slack\.com/|discord(?:app)?\.com/api/webhooks/",
        pattern=r"(?:hooks\.slack\.com/(?:services|workflows|triggers)|discord(?:app)?\.com/api/webhooks)/(?P<secret>[A-Za-z0-9/_\-]+)",
        standalone=False,
    ),
    SecretKind("Google API key", cue="aiza", pattern=r"AIza(?P<secret>[A-Za-z0-9_\-]{35})"),
    SecretKind(
        "JSON Web Token",  # possessive and bounded: a hostile text of near misses costs linear time
        cue="eyj",
        pattern=r"eyJ(?P<secret>[A-Za-z0-9_\-]{8,1024}+\.[A-Za-z0-9_\-]{8,}+\.[A-Za-z0-9_\-]{8,}+)",
    ),
    SecretKind(
        "private key",
        cue="-----begin ",
        pattern=r"-----BEGIN [A-Z ]{0,30}PRIVATE KEY(?: BLOCK)?-----(?P<secret>[\s\S]*?)(?=-----END |\Z)",
        standalone=False,
    ),
    SecretKind(
        "password",  # a value that is not a plain word ("password: see the vault" says none)
        cue="pass(?:word|wd|phrase)",
        pattern=rf"(?i:pass(?:word|wd|phrase))[\w\-]{{0,30}}{_ASSIGNED}(?P<secret>(?={_VALUE}{{0,256}}[^\sA-Za-z\"'&;,<>]){_VALUE}{{6,}})",
        standalone=False,
    ),
    SecretKind("password in a URL", cue="://", pattern=r"://[^\s:/@]{0,256}:(?P<secret>[^\s@/]{1,256})@", standalone=False),
    SecretKind("bearer token", cue="bearer", pattern=r"(?i:bearer)\s+(?P<secret>[A-Za-z0-9._~+/\-]{16,}=*)"),
    SecretKind(
        "secret assigned to a key",  # AWS_SECRET_ACCESS_KEY=..., "SessionToken": "...", api_key: '...'
        cue=r"secret|token|api[_\-]?key|access[_\-]?key|credential",
        pattern=rf"(?i:secret|token|api[_\-]?key|access[_\-]?key|credentials?)[\w\-]{{0,30}}{_ASSIGNED}"
        rf"(?P<secret>(?={_TOKEN}{{0,256}}\d)(?={_TOKEN}{{0,256}}[A-Za-z]){_TOKEN}{{8,}})",  # not a figure, not a word
        standalone=False,
    ),
)

_INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
_IN_TOKEN = r"[\w+/=.\-]"
_LINE_BREAK_IN_TOKEN = re.compile(  # the break first, then what surrounds it: quick to search
    rf"\r\n(?<={_IN_TOKEN}\r\n)(?={_IN_TOKEN})|[\r\n](?<={_IN_TOKEN}[\r\n])(?={_IN_TOKEN})"
)


_CUES = re.compile("|".join(kind.cue for kind in SECRET_KINDS))
# What a case-insensitive ASCII letter also matches in Python's regexes (İ, ı, ſ, the Kelvin sign), as plain letters
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def _folded(text: str) -> str:
    """`text` read loosely: lower case, without invisible characters or line breaks. A view of the text removes no
    more than that, so a text whose folded form holds no kind's cue holds no secret of the kinds."""
    return _INVISIBLE.sub("", text).translate(_FOLD).lower().replace("\r", "").replace("\n", "")


def _may_hold_secret(text: str) -> bool:
    """Whether some kind's cue is in `text` read loosely. Most answers hold none, and this one search replaces a
    search per kind."""
    return _CUES.search(_folded(text)) is not None


_APART = "\x00"  # between texts searched together: no cue matches it, and folding keeps it


def _cued(texts: Sequence[str]) -> set[int]:
    """Which of `texts` may hold a secret of the kinds, told by one search over all of them (no cue spans `_APART`).
    Where Arrow is loaded already (a run, not a small command), its RE2 searches the texts: the same matches (the
    cues are plain ASCII alternatives) in a third of the time (the distinct answers of 50,000 episodes: 0.018 s)."""
    folded = _folded(_APART.join(texts))
    pieces = folded.split(_APART)
    if len(pieces) != len(texts):  # some text holds `_APART` itself
        return {at for at, text in enumerate(texts) if _may_hold_secret(text)}
    arrow = sys.modules.get("pyarrow.compute")
    if arrow is not None:
        return set(arrow.indices_nonzero(arrow.match_substring_regex(pieces, _CUES.pattern)).to_pylist())
    ends = list(accumulate(len(piece) + len(_APART) for piece in pieces))
    return {bisect_right(ends, match.start()) for match in _CUES.finditer(folded)}


@dataclass(frozen=True)
class _View:
    """A text as matched once: another (`beneath`, else the original) without what a regex removed."""

    text: str
    seams: list[int]  # where something was removed (ascending): a secret may start there whatever precedes it
    shifts: list[int]  # how many characters were removed up to each seam
    beneath: _View | None = None

    def origin(self, position: int) -> int:
        """Where the view's character at `position` is in the original text."""
        seam = bisect_right(self.seams, position) - 1
        below = position + (self.shifts[seam] if seam >= 0 else 0)
        return self.beneath.origin(below) if self.beneath else below


def _without(unseen: re.Pattern[str], text: str, beneath: _View | None = None) -> _View:
    """`text` without what `unseen` matches, remembering where each removal was."""
    seams, shifts, removed = [], [], 0
    for match in unseen.finditer(text):
        seams.append(match.start() - removed)
        removed += match.end() - match.start()
        shifts.append(removed)
    return _View(unseen.sub("", text) if seams else text, seams, shifts, beneath)


def _views(text: str) -> Iterator[_View]:
    """The text without invisible characters, then also without line breaks inside a token (when it has some)."""
    visible = _without(_INVISIBLE, text)
    yield visible
    joined = _without(_LINE_BREAK_IN_TOKEN, visible.text, visible)
    if joined.seams:
        yield joined


@dataclass(frozen=True)
class _Compiled:
    declared: re.Pattern[str]  # quick to search (it starts with its literal), blind to what precedes a match
    alone: re.Pattern[str] | None  # a standalone kind's, not after a letter or digit: linear, but slower to search


@lru_cache(maxsize=32)
def _compiled(extra_patterns: tuple[str, ...]) -> tuple[_Compiled, ...]:
    """Each kind's regexes; the configured patterns case-insensitive, as they always were."""
    kinds = tuple(
        _Compiled(re.compile(kind.pattern), re.compile(rf"(?<![A-Za-z0-9])(?:{kind.pattern})") if kind.standalone else None)
        for kind in SECRET_KINDS
    )
    return kinds + tuple(_Compiled(re.compile(pattern, re.IGNORECASE), None) for pattern in extra_patterns)


def _matches(compiled: _Compiled, view: _View) -> Iterator[re.Match[str]]:
    """The kind's matches in the view: anywhere, or standalone ones and those starting at a seam (each seam
    not inside a match already, so a text of many joined lines costs linear time)."""
    if compiled.alone is None:
        yield from compiled.declared.finditer(view.text)
        return
    if not compiled.declared.search(view.text):  # most texts hold nothing of the kind: the quick search says so
        return
    found = list(compiled.alone.finditer(view.text))
    yield from found
    starts, reach = [match.start() for match in found], 0
    for seam in view.seams:
        before = bisect_right(starts, seam) - 1
        if seam < reach or (before >= 0 and seam < found[before].end()):
            continue  # inside a match already
        if match := compiled.declared.match(view.text, seam):
            yield match
            reach = match.end()


def secret_spans(text: str, extra_patterns: Iterable[str] = (), cued: bool | None = None) -> list[tuple[int, int]]:
    """Where `text` holds secrets: sorted, non-overlapping (start, end) spans of the parts to hide. `cued`: whether it
    may hold one of the kinds, when the caller searched for their cues already."""
    compiled = _compiled(tuple(extra_patterns))
    cued = _may_hold_secret(text) if cued is None else cued
    searched = compiled if cued else compiled[len(SECRET_KINDS) :]  # configured patterns: always
    spans = []
    for view in _views(text) if searched else ():
        for regexes in searched:
            for match in _matches(regexes, view):
                start, end = match.span("secret") if "secret" in match.re.groupindex else match.span()
                if start < end:
                    spans.append((view.origin(start), view.origin(end - 1) + 1))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def redact(text: str, extra_patterns: Iterable[str] = ()) -> str:
    """Each secret's hidden part becomes `…[redacted]`, e.g. `sk-…[redacted]`, `password=…[redacted]`."""
    return _hidden(text, secret_spans(text, extra_patterns))


def _hidden(text: str, spans: list[tuple[int, int]]) -> str:
    pieces, last = [], 0
    for start, end in spans:
        pieces += [text[last:start], HIDDEN]
        last = end
    return "".join(pieces) + text[last:]


def _spans_each(texts: Sequence[str], extra_patterns: Iterable[str]) -> Iterator[list[tuple[int, int]]]:
    """`secret_spans` of each text, the kinds' cues searched once over all of them: a listing of thousands of ids, or
    a day's answers, holds none."""
    patterns, cued = tuple(extra_patterns), _cued(texts)
    for at, text in enumerate(texts):
        yield secret_spans(text, patterns, at in cued) if patterns or at in cued else []


def redact_each(texts: Sequence[str], extra_patterns: Iterable[str] = ()) -> list[str]:
    """`redact` of each text."""
    return [_hidden(text, spans) for text, spans in zip(texts, _spans_each(texts, extra_patterns), strict=True)]


def contains_secret_each(texts: Sequence[str], extra_patterns: Iterable[str] = ()) -> list[bool]:
    """Whether each text holds a secret: what scoring calls a leak is exactly what the outputs would hide."""
    return [bool(spans) for spans in _spans_each(texts, extra_patterns)]


_NO_TEXT = frozenset({int, float, bool, type(None)})  # exactly these types: what a document holds most besides text


def redact_tree(value: T, extra_patterns: Iterable[str] = ()) -> T:
    """JSON-like data (a report, an alert) with every string in it redacted, keys too. Its distinct strings are
    redacted together (a report repeats its keys and ids thousands of times, and most of its texts hold no cue), and
    only a tree where one changed is rebuilt: else `value` itself is returned."""
    texts: dict[str, None] = {}

    def gather(item: Any) -> None:
        if type(item) in _NO_TEXT:
            return
        if isinstance(item, str):
            texts[item] = None
        elif isinstance(item, dict):
            for key, inner in item.items():
                gather(key)
                gather(inner)
        elif isinstance(item, list | tuple):
            for inner in item:
                gather(inner)

    gather(value)
    changed = {text: shown for text, shown in zip(texts, redact_each(list(texts), extra_patterns), strict=True) if shown != text}

    def rebuilt(item: Any) -> Any:
        if type(item) in _NO_TEXT:
            return item
        if isinstance(item, str):
            return changed.get(item, item)
        if isinstance(item, dict):
            return {rebuilt(key): rebuilt(inner) for key, inner in item.items()}
        if isinstance(item, list | tuple):
            return type(item)(rebuilt(inner) for inner in item)
        return item

    return rebuilt(value) if changed else value


def excerpt(text: str, extra_patterns: Iterable[str], limit: int) -> str:
    """Untrusted text as a report shows it: secrets redacted (before the cut, which could halve one), at most
    `limit` characters (then `…`)."""
    shown = redact(text, extra_patterns)
    return shown if len(shown) <= limit else shown[:limit] + "…"
