"""Debian's headless Chromium, as the project drives it: where it is, and the flags it starts with.

One home for the flags, shared by the browser test (``tests/test_browser.py``) and the dashboard screenshots
(:mod:`helpers.workbook.screenshots`). ``make test`` installs the ``chromium`` and ``chromium-driver``
packages (see the Makefile); Selenium drives the browser through chromedriver.
"""

from __future__ import annotations

from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
#: Flags for a headless Chromium with no network of its own: without the background-networking ones it
#: keeps trying to reach Google's services, which this machine's closed network refuses.
CHROMIUM_FLAGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-default-apps", "--window-size=1280,1000",
)  # fmt: skip


def installed() -> bool:
    """Whether both the browser and its driver are where Debian's packages put them."""
    return CHROMIUM.is_file() and CHROMEDRIVER.exists()


def flags(profile: Path, *, window_size: tuple[int, int] | None = None) -> list[str]:
    """:data:`CHROMIUM_FLAGS` with a user-data folder of its own (``profile``) and, if given, another window size."""
    chosen = [flag for flag in CHROMIUM_FLAGS if window_size is None or not flag.startswith("--window-size=")]
    if window_size is not None:
        chosen.append(f"--window-size={window_size[0]},{window_size[1]}")
    return [*chosen, f"--user-data-dir={profile}"]
