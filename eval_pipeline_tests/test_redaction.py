"""The one redaction: each kind of secret found and hidden, split ones too, prose left alone, bounded time."""

import sys
import time

import pytest

from eval_pipeline import redaction
from eval_pipeline.redaction import HIDDEN, SECRET_KINDS, contains_secret_each, excerpt, redact, redact_each, redact_tree
from eval_pipeline_tests.leaks import LEAKS, ZERO_WIDTH_SPACE


@pytest.fixture(params=["re", "RE2"])
def cue_search(request, monkeypatch):
    """The search for the kinds' cues either way: Python's `re` in a small command, Arrow's RE2 where it is loaded."""
    if request.param == "re":
        monkeypatch.delitem(sys.modules, "pyarrow.compute", raising=False)
    else:
        import pyarrow.compute  # noqa: F401
    return request.param


def test_every_kind_has_an_example_leak():
    assert {kind.name for kind in SECRET_KINDS} == {leak.kind for leak in LEAKS}


@pytest.mark.parametrize("leak", LEAKS, ids=lambda leak: f"{leak.kind}: {leak.text[:12]!r}")
def test_each_kind_is_hidden_and_what_surrounds_it_kept(leak):
    shown = redact(leak.text)
    assert HIDDEN in shown and not [tell for tell in leak.tells if tell in shown]
    assert shown == leak.text.replace(leak.secret, HIDDEN)  # only the secret: `sk-`, `password=`, the URL's host stay
    assert contains_secret_each([leak.text]) == [True]


def test_what_a_report_shows():
    key = "sk-" + "Ab3dEf6hIj9kLm2nOp5qRs8t"
    assert redact(f"use {key} now") == "use sk-…[redacted] now"
    assert redact("postgres://admin:" + "s3cr3tP4ss" + "@db:5432/app") == "postgres://admin:…[redacted]@db:5432/app"
    assert excerpt(f"{key} and more", (), 9) == "sk-…[reda…"  # redacted before the cut, which could halve the key
    assert redact(redact(f"use {key}")) == redact(f"use {key}")
    assert redact("lookup_ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8") == "lookup_ghp_…[redacted]"  # a tool's name


def test_a_secret_split_by_invisible_characters_or_line_breaks_is_hidden_whole():
    for splitter in (ZERO_WIDTH_SPACE, "\u2060", "\ufeff", "\u00ad", "\n", "\r\n", ZERO_WIDTH_SPACE + "\n"):
        text = "Here:\nsk-" + "Ab3dEf6h" + splitter + "Ij9kLm2nOp5q" + splitter + "Rs8t. Thanks"
        assert redact(text) == "Here:\nsk-…[redacted]. Thanks", repr(splitter)


@pytest.mark.parametrize(
    "prose",
    [
        "Resolved task-refund-order-processing-flow and ask-the-customer-for-details.",
        "Reset your password: see the account page. Passwords: 3 tried.",
        "Used 1,234 tokens; max_tokens=1024; total_tokens: 123456789.",
        "commit 3bfa953d1c0e4a7b9f2e8d6c5b4a3f2e1d0c9b8a fixed it",
        "See https://example.com:8080/path and http://host/a@b.",
        "The bearer of bad news. Secret: none.",
        "Our office in Asia\nand AKIA.",
    ],
)
def test_prose_is_left_alone(prose):
    assert redact(prose) == prose


@pytest.mark.parametrize(
    "text", ["ſecret_key = ab12cd34ef56", "PAſſWORD=hunter2!x9", "credentİals=ab12cd34ef56gh", "BEARER abcdefghijklmnop1234"]
)
def test_letters_that_case_insensitive_kinds_read_as_ascii_are_found_too(text, cue_search):
    """Python's case-insensitive regexes read ſ as s, İ and ı as i and the Kelvin sign as k: the one search for the
    kinds' cues, which decides whether a text is searched for them at all, must read them so too."""
    assert HIDDEN in redact(text) and contains_secret_each([text]) == [True]


def test_configured_patterns_add_to_the_kinds():
    assert redact("ticket INT-12345 is internal", ["int-[0-9]+"]) == "ticket …[redacted] is internal"
    assert redact("employee id E-99", [r"employee id (?P<secret>\S+)"]) == "employee id …[redacted]"


def test_every_string_of_a_document_is_redacted_keys_too():
    key = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    document = {"agents": [{"agent_id": key, "n": 3}], key: (key, None)}
    assert redact_tree(document) == {
        "agents": [{"agent_id": "ghp_…[redacted]", "n": 3}],
        "ghp_…[redacted]": ("ghp_…[redacted]", None),
    }


def test_a_document_is_redacted_as_each_of_its_strings_alone():
    """Its distinct strings are redacted together, and a document without a secret comes back as it is."""

    def each_alone(item, patterns):
        if isinstance(item, str):
            return redact(item, patterns)
        if isinstance(item, dict):
            return {each_alone(key, patterns): each_alone(inner, patterns) for key, inner in item.items()}
        if isinstance(item, list | tuple):
            return type(item)(each_alone(inner, patterns) for inner in item)
        return item

    plain = {"summary": {"episodes": 3, "rate": 0.5, "ok": True, "none": None}, "ids": ["task-0042", "ask-the-user"]}
    assert redact_tree(plain) is plain
    for leak in LEAKS:
        document = {**plain, "alerts": [{"message": f"saw {leak.text}", "n": 1}, (leak.text, "s", "k-" + "a" * 20)]}
        for patterns in ((), (r"ticket-\d+",)):
            assert redact_tree(document, patterns) == each_alone(document, patterns)
    assert redact_tree({"note": "ticket-7 done"}, [r"ticket-\d+"]) == {"note": "…[redacted] done"}


def _near_misses(size: int = 100_000) -> dict[str, str]:
    """Texts built to make a regex backtrack: each kind's prefix glued on, split up, or repeated without its end."""
    texts = {
        "assignments": "token=" * (size // 6),
        "JWT headers": "-eyJa" * (size // 5),
        "URL users": "://a:" * (size // 5),
        "private keys": "-----BEGIN PRIVATE KEY-----" * (size // 27),
        "one long word": "w" * size,
        "many lines": "line\n" * (size // 5),
    }
    for leak in LEAKS:
        prefix = leak.text[: leak.text.index(leak.secret)][-12:]
        for glue in ("-", "a", "\n", "=", ".", ZERO_WIDTH_SPACE):
            unit = glue + prefix + "a" * 7
            texts[f"{leak.kind} after {glue!r}"] = unit * (size // len(unit))
    return texts


@pytest.mark.parametrize("hostile", _near_misses().values(), ids=list(_near_misses()))
def test_time_stays_linear_on_hostile_text(hostile):
    started = time.perf_counter()
    redact(hostile)
    assert time.perf_counter() - started < 1.0


def test_a_configured_pattern_that_is_no_regex_is_refused_when_the_config_is_read(tmp_path):
    from eval_pipeline.config import load_config
    from eval_pipeline.errors import UserInputError

    config = tmp_path / "eval.toml"
    config.write_text("[policies]\nsecret_patterns = ['INT-[0-9']\n")
    with pytest.raises(UserInputError, match=r"secret_patterns.*'INT-\[0-9' is not a regular expression"):
        load_config(config)


def test_texts_redacted_together_read_as_each_alone(cue_search):
    """`redact_each` and `contains_secret_each` search the kinds' cues once over all their texts: a cue split between
    two texts is none, and a text holding the separator itself is still searched."""
    texts = [
        *(leak.text for leak in LEAKS),
        "task-0042",
        "ask-the-user",
        "s",
        "k-" + "a" * 20,  # `sk-` and a key's length, only if read across the two texts
        "ticket INT-12345",
        "",
        "Here:\nsk-Ab3dEf6h" + ZERO_WIDTH_SPACE + "\nIj9kLm2nOp5qRs8t. Thanks",
    ]
    for listed in (texts, [*texts, "before\x00sk-" + "Ab3dEf6hIj9kLm2nOp5qRs8t"]):
        for patterns in ((), ("int-[0-9]+",)):
            together = redact_each(listed, patterns)
            assert together == [redact(text, patterns) for text in listed]
            assert contains_secret_each(listed, patterns) == [shown != text for shown, text in zip(together, listed, strict=True)]
            assert together[listed.index("k-" + "a" * 20)] == "k-" + "a" * 20
            hidden_in = len(LEAKS) + (len(listed) - len(texts)) + 1 + bool(patterns)  # the split key, the ticket
            assert HIDDEN in together[-1] and sum(HIDDEN in text for text in together) == hidden_in


def test_both_searches_for_cues_find_the_same_texts(monkeypatch):
    """RE2 and Python's `re` tell the same texts from the same cues: every leak, prose, hostile text, and what folding
    reads as ASCII."""
    import pyarrow.compute  # noqa: F401

    texts = [
        *(leak.text for leak in LEAKS),
        *_near_misses(2_000).values(),
        "Used 1,234 tokens; max_tokens=1024", "The bearer of bad news.", "see https://x.io", "ſecret_key = ab12", "İ K ı",
        "sk-" + "a" * 15, "sk-" + "a" * 16, "SK-" + "A" * 16, "-----BEGIN ", "eyJ", "paſſphrase", "", "naïve café — ok",
    ]  # fmt: skip
    with_re2 = redaction._cued(texts)
    monkeypatch.delitem(sys.modules, "pyarrow.compute")
    assert redaction._cued(texts) == with_re2
    assert len(with_re2) > len(LEAKS)  # prose with a cue is among them: a cue only tells which texts to search
