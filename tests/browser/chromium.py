"""Headless Chromium (Debian's ``chromium``, installed by scripts/ensure-chromium.sh) for the
browser tests: the DOM of a page after its scripts ran, and screenshots."""

from __future__ import annotations

import itertools
import shutil
import subprocess
from pathlib import Path

ENSURE = Path(__file__).resolve().parents[2] / "scripts" / "ensure-chromium.sh"

_profiles = itertools.count()


def chromium() -> str:
    """The browser's path; installs it (scripts/ensure-chromium.sh) when it is missing."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    subprocess.run(["bash", str(ENSURE)], check=True, timeout=900)
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError(f"no chromium on PATH after {ENSURE} ran")


def _run(work: Path, args: list[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    profile = work / f"chromium-profile-{next(_profiles)}"
    profile.mkdir(parents=True)  # a new, empty profile for every run
    command = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        *args,
    ]
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise RuntimeError(f"{command} exited {done.returncode}: {done.stderr[-2000:]}")
    return done


def dump_dom(url: str, work: Path, timeout_s: float = 120) -> str:
    """The page's DOM once it loaded and its scripts ran (``--dump-dom``)."""
    return _run(work, ["--virtual-time-budget=5000", "--dump-dom", url], timeout_s).stdout


def screenshot(
    url: str, png: Path, work: Path, size: tuple[int, int] = (1400, 2000), timeout_s: float = 120
) -> Path:
    """A PNG of the page as a person sees it in a window of ``size``."""
    _run(
        work,
        [
            "--virtual-time-budget=5000",
            "--hide-scrollbars",
            f"--window-size={size[0]},{size[1]}",
            f"--screenshot={png}",
            url,
        ],
        timeout_s,
    )
    if not png.is_file():
        raise RuntimeError(f"chromium wrote no screenshot to {png}")
    return png
