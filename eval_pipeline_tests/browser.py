"""Headless Chromium for tests that must see a page as a person would (Debian's `chromium`)."""

import re
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


def page_width(page: Path, profile: Path, window_width: int = 1280) -> int:
    """How wide the page lays out in a window `window_width` pixels wide: wider, and a reader scrolls sideways.

    A copy of the page with a script that writes its scroll width into the title is loaded, since the page itself
    runs none."""
    probe = profile.parent / f"{page.stem}.width.html"
    measure = "<script>document.title = document.documentElement.scrollWidth</script></body>"
    probe.write_text(page.read_text().replace("</body>", measure))
    dom = subprocess.run(
        ["chromium", *HEADLESS, f"--user-data-dir={profile}", f"--window-size={window_width},1000", "--dump-dom", probe.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    title = re.search(r"<title>(\d+)</title>", dom)
    assert title, "chromium did not run the measuring script"
    return int(title.group(1))


def rendered_dom(page: Path, profile: Path) -> str:
    """The page's DOM as chromium built it (`--dump-dom`): what a reader's browser shows, parsed."""
    return served_dom(page.as_uri(), profile)


def served_dom(url: str, profile: Path) -> str:
    """The DOM chromium builds from `url` (a file, or a page a server answers)."""
    return subprocess.run(
        ["chromium", *HEADLESS, f"--user-data-dir={profile}", "--window-size=1280,1000", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
