"""Fake secrets of every kind the redaction knows, each in the text an agent would leak it in.

Every secret is glued together from parts so that secret scanners stay quiet about this repository.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ZERO_WIDTH_SPACE = "\u200b"


@dataclass(frozen=True)
class Leak:
    kind: str  # the SecretKind it is an example of
    text: str  # as an agent would write it
    secret: str  # what must not survive: the part the redaction hides

    @property
    def tells(self) -> list[str]:
        """Pieces of the secret long enough that finding one in an output means it leaked (a split secret's halves)."""
        return [piece for piece in re.split(f"[{ZERO_WIDTH_SPACE}\r\n]+", self.secret) if len(piece) >= 6]


_PRIVATE_KEY_BODY = "MIIEowIBAAKCAQEA7bq9cM0aQwErTy" + "\nUiOpAsDfGhJkLzXcVbNm1234567890" + "\nQwErTyUiOpAsDfGh=="

LEAKS: tuple[Leak, ...] = (
    Leak("OpenAI-style API key", "key: sk-" + "proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8t", "proj-Ab3dEf6hIj9kLm2nOp5qRs8t"),
    Leak(
        "OpenAI-style API key",  # split by a zero-width space, which no reader sees
        "use sk-" + "Zy8xWv7u" + ZERO_WIDTH_SPACE + "Ts6rQp5oNm4lKj3i",
        "Zy8xWv7u" + ZERO_WIDTH_SPACE + "Ts6rQp5oNm4lKj3i",
    ),
    Leak(
        "OpenAI-style API key",  # wrapped onto a second line
        "the key is\nsk-" + "Qw1eRt2yUi3o" + "\n" + "Pa4sDf5gHj6kLz7x",
        "Qw1eRt2yUi3o\nPa4sDf5gHj6kLz7x",
    ),
    Leak("Stripe key", "stripe: sk_" + "live_" + "51H8xKqLmN0pQrStUvWxYz12", "51H8xKqLmN0pQrStUvWxYz12"),
    Leak("AWS access key id", "AKIA" + "IOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
    Leak(
        "secret assigned to a key",
        "aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    Leak("GitHub token", "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    Leak("GitLab token", "glpat-" + "Xy9zAb8cDe7fGh6iJk5l", "Xy9zAb8cDe7fGh6iJk5l"),
    Leak("Hugging Face token", "HF hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345", "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345"),
    Leak("npm token", "publish with npm_" + "a1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "a1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"),
    Leak(
        "Slack token",
        "xoxb-" + "123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx",
        "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    ),
    Leak(
        "chat webhook URL",
        "POST to https://hooks.slack.com/services/" + "T0AAAAAAA/B0BBBBBBB/" + "Xq7Wd9Lk2Mn4Pb6Vc8Zr1Ty3",
        "T0AAAAAAA/B0BBBBBBB/Xq7Wd9Lk2Mn4Pb6Vc8Zr1Ty3",
    ),
    Leak("Google API key", "maps key AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
    Leak(
        "JSON Web Token",
        "token eyJ"
        + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
        + "eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    Leak(
        "private key",
        "-----BEGIN RSA " + "PRIVATE KEY-----\n" + _PRIVATE_KEY_BODY + "\n-----END RSA " + "PRIVATE KEY-----",
        "\n" + _PRIVATE_KEY_BODY + "\n",
    ),
    Leak("password", "login with password=" + "hunter2-Correct", "hunter2-Correct"),
    Leak("password in a URL", "DATABASE_URL=postgres://admin:" + "s3cr3tP4ssw0rd" + "@db.internal:5432/app", "s3cr3tP4ssw0rd"),
    Leak("bearer token", "Authorization: Bearer " + "abcDEF123456ghiJKL789012mno", "abcDEF123456ghiJKL789012mno"),
    Leak("secret assigned to a key", '{"api_key": "' + "9f8e7d6c5b4a39281706" + '"}', "9f8e7d6c5b4a39281706"),
)
