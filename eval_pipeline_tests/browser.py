"""Headless Chromium for tests that must see a page as a person would (Debian's `chromium`)."""

import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

HEADLESS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
needs_chromium = pytest.mark.skipif(
    shutil.which("chromium") is None, reason="Debian's chromium is not installed (make test installs it as root)"
)


def screenshot(url: str, out: Path, profile: Path, size: str = "1280,2000") -> Path:
    subprocess.run(
        ["chromium", *HEADLESS, f"--user-data-dir={profile}", f"--window-size={size}", f"--screenshot={out}", url],
        capture_output=True,
        timeout=120,
        check=True,
    )
    return out


def distinct_pixel_bytes(png: Path) -> int:
    """How many distinct byte values the image's pixel data holds: 1-2 for a blank page, hundreds for a real one."""
    data, position, pixels = png.read_bytes(), 8, b""
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        if kind == b"IDAT":
            pixels += data[position + 8 : position + 8 + length]
        position += 12 + length
    return len(set(zlib.decompress(pixels)))
