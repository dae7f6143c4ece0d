"""Secrets that agents leak: one declaration finds them for scoring and hides them in every output.

The kinds below always apply; `[policies] secret_patterns` adds a project's own. A secret split by a
zero-width character or a line break reads whole to a person, so each text is matched twice: with
invisible characters removed, and with line breaks inside a token removed too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar

T = TypeVar("T")

HIDDEN = "…[redacted]"  # what replaces a secret; the text a pattern keeps around it says which kind it was


@dataclass(frozen=True)
class SecretKind:
    """A kind of secret. `pattern` (case-insensitive) finds one; its group `secret`, else the whole match, is
    hidden, so what the pattern keeps around it (`sk-`, `password=`, a URL's user and host) stays readable."""

    name: str
    pattern: str


_WORD_START = r"(?<![A-Za-z0-9])"  # not inside a word; after `_` it may be (a tool named lookup_ghp_...)
_ASSIGNED = r"""["']?\s*[:=]\s*["']?"""  # password=..., "password": "...", password: ...
_VALUE = r"""[^\s"'&;,<>]"""  # a value's characters, up to a quote, space or separator
_TOKEN = r"[A-Za-z0-9/+=_\-.~]"
SECRET_KINDS: tuple[SecretKind, ...] = (
    SecretKind("OpenAI-style API key", _WORD_START + r"sk-(?P<secret>[A-Za-z0-9_\-]{16,})"),  # many vendors' too (sk-ant-, ...)
    SecretKind("Stripe key", _WORD_START + r"[rs]k_(?:live|test)_(?P<secret>[A-Za-z0-9]{10,})"),
    SecretKind("AWS access key id", _WORD_START + r"(?:AKIA|ASIA)(?P<secret>[A-Z0-9]{16})(?![A-Za-z0-9])"),
    SecretKind("GitHub token", _WORD_START + r"(?:gh[pousr]_|github_pat_)(?P<secret>[A-Za-z0-9_]{22,})"),
    SecretKind("GitLab token", _WORD_START + r"glpat-(?P<secret>[A-Za-z0-9_\-]{20,})"),
    SecretKind("Hugging Face token", _WORD_START + r"hf_(?P<secret>[A-Za-z0-9]{30,})"),
    SecretKind("npm token", _WORD_START + r"npm_(?P<secret>[A-Za-z0-9]{36})"),
    SecretKind("Slack token", _WORD_START + r"xox[abposr]-(?P<secret>[A-Za-z0-9\-]{10,})"),
    SecretKind(
        "chat webhook URL",  # the path is the credential
        r"(?:hooks\.slack\.com/(?:services|workflows|triggers)|discord(?:app)?\.com/api/webhooks)/(?P<secret>[A-Za-z0-9/_\-]+)",
    ),
    SecretKind("Google API key", _WORD_START + r"AIza(?P<secret>[A-Za-z0-9_\-]{35})"),
    SecretKind("JSON Web Token", _WORD_START + r"eyJ(?P<secret>[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,})"),
    SecretKind("private key", r"-----BEGIN [A-Z ]{0,30}PRIVATE KEY(?: BLOCK)?-----(?P<secret>[\s\S]*?)(?=-----END |\Z)"),
    SecretKind(
        "password",  # a value that is not a plain word ("password: see the vault" says none)
        rf"pass(?:word|wd|phrase)[\w\-]{{0,30}}{_ASSIGNED}(?P<secret>(?={_VALUE}*[^\sA-Za-z\"'&;,<>]){_VALUE}{{6,}})",
    ),
    SecretKind("password in a URL", _WORD_START + r"[a-z][a-z0-9+.\-]{0,20}://[^\s:/@]{0,256}:(?P<secret>[^\s@/]{1,256})@"),
    SecretKind("bearer token", _WORD_START + r"bearer\s+(?P<secret>[A-Za-z0-9._~+/\-]{16,}=*)"),
    SecretKind(
        "secret assigned to a key",  # AWS_SECRET_ACCESS_KEY=..., "SessionToken": "...", api_key: '...'
        rf"(?:secret|token|api[_\-]?key|access[_\-]?key|credentials?)[\w\-]{{0,30}}{_ASSIGNED}"
        rf"(?P<secret>(?={_TOKEN}*\d)(?={_TOKEN}*[A-Za-z]){_TOKEN}{{8,}})",  # letters and digits: not a figure or a word
    ),
)

_INVISIBLE = "[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]"
_TOKEN_CHARACTER = r"[\w+/=.\-]"
_LINE_BREAK_IN_TOKEN = rf"(?<={_TOKEN_CHARACTER}){_INVISIBLE}*(?:\r\n|\r|\n){_INVISIBLE}*(?={_TOKEN_CHARACTER})"
_UNSEEN = (re.compile(_INVISIBLE), re.compile(f"{_LINE_BREAK_IN_TOKEN}|{_INVISIBLE}"))  # what each view removes


@dataclass(frozen=True)
class _View:
    """The text as matched once: `text` without what one of `_UNSEEN` removed."""

    text: str
    origin: Sequence[int]  # the position in the original text of each character kept
    seams: list[int]  # where something was removed: a line that was joined on may start a secret there


def _views(text: str) -> Iterator[_View]:
    """Without invisible characters, then also without line breaks inside a token; each different view once."""
    previous = None
    for unseen in _UNSEEN:
        removed = [match.span() for match in unseen.finditer(text)]
        view = _View(text, range(len(text)), [])
        if removed:
            origin: list[int] = []
            seams, last = [], 0
            for start, end in removed:
                origin += range(last, start)
                seams.append(len(origin))
                last = end
            origin += range(last, len(text))
            view = _View("".join(map(text.__getitem__, origin)), origin, seams)
        if view.text != previous:
            yield view
        previous = view.text


@dataclass(frozen=True)
class _Compiled:
    anywhere: re.Pattern[str]
    at_seam: re.Pattern[str] | None  # without a leading word boundary: the joined line's last word is not the secret's


@lru_cache(maxsize=32)
def _compiled(extra_patterns: tuple[str, ...]) -> tuple[_Compiled, ...]:
    patterns = (*(kind.pattern for kind in SECRET_KINDS), *extra_patterns)
    return tuple(
        _Compiled(
            re.compile(pattern, re.IGNORECASE),
            re.compile(pattern.removeprefix(_WORD_START), re.IGNORECASE) if pattern.startswith(_WORD_START) else None,
        )
        for pattern in patterns
    )


def secret_spans(text: str, extra_patterns: Iterable[str] = ()) -> list[tuple[int, int]]:
    """Where `text` holds secrets: sorted, non-overlapping (start, end) spans of the parts to hide."""
    compiled = _compiled(tuple(extra_patterns))
    spans = []
    for view in _views(text):
        for regexes in compiled:
            matches = list(regexes.anywhere.finditer(view.text))
            if regexes.at_seam and view.seams:
                matches += filter(None, (regexes.at_seam.match(view.text, seam) for seam in view.seams))
            for match in matches:
                start, end = match.span("secret") if "secret" in match.re.groupindex else match.span()
                if start < end:
                    spans.append((view.origin[start], view.origin[end - 1] + 1))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def contains_secret(text: str, extra_patterns: Iterable[str] = ()) -> bool:
    return bool(secret_spans(text, extra_patterns))


def redact(text: str, extra_patterns: Iterable[str] = ()) -> str:
    """Each secret's hidden part becomes `…[redacted]`, e.g. `sk-…[redacted]`, `password=…[redacted]`."""
    pieces, last = [], 0
    for start, end in secret_spans(text, extra_patterns):
        pieces += [text[last:start], HIDDEN]
        last = end
    return "".join(pieces) + text[last:]


def redact_tree(value: T, extra_patterns: Iterable[str] = ()) -> T:
    """JSON-like data (a report, an alert) with every string in it redacted, keys too."""
    patterns = tuple(extra_patterns)

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            return redact(item, patterns)
        if isinstance(item, dict):
            return {walk(key): walk(inner) for key, inner in item.items()}
        if isinstance(item, list | tuple):
            return type(item)(walk(inner) for inner in item)
        return item

    return walk(value)


def excerpt(text: str, extra_patterns: Iterable[str], limit: int) -> str:
    """Untrusted text as a report shows it: secrets redacted (before the cut, which could halve one), at most
    `limit` characters (then `…`)."""
    shown = redact(text, extra_patterns)
    return shown if len(shown) <= limit else shown[:limit] + "…"
