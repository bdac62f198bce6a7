"""The HTML report in a real headless browser: it fits a 1400 px window without sideways
scrolling, and a screenshot can be taken and looked at.

Skipped where no Chromium is installed (Debian: `apt-get install chromium`).  Set
TFGRADMIGRATE_SCREENSHOT_DIR to keep the screenshot.
"""
from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess

import pytest

from migrator import reports
from test_reports import SAMPLE_SUMMARY, sample_results

pytestmark = pytest.mark.slow

WIDTH = 1400

#: appended to a copy of the report only: the report itself carries no script
MEASURE = """<script>
document.title = "width:" + document.documentElement.scrollWidth + ":" + document.documentElement.clientWidth;
</script>"""


def _browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        exe = shutil.which(name)
        if exe:
            return exe
    pytest.skip("no Chromium installed")


def _run(page, *args):
    cmd = [_browser(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--mute-audio",
           f"--window-size={WIDTH},1000", "--virtual-time-budget=3000", *args, page.as_uri()]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("html")
    page = folder / "report.html"
    page.write_text(reports.to_html(sample_results(), SAMPLE_SUMMARY), encoding="utf-8")
    return page


def test_the_report_fits_1400_px_without_sideways_scrolling(report):
    probe = report.with_name("probe.html")
    probe.write_text(report.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    out = _run(probe, "--dump-dom")
    found = re.search(r"<title>width:(\d+):(\d+)</title>", out.stdout)
    assert found, out.stderr[-2000:]
    scroll_width, client_width = int(found[1]), int(found[2])
    assert client_width == WIDTH
    assert scroll_width <= client_width  # the long source line and the long path wrap


def test_a_screenshot_of_the_report(report, tmp_path):
    shot = tmp_path / "report.png"
    out = _run(report, f"--screenshot={shot}")
    assert shot.is_file(), out.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (WIDTH, 1000)
    assert len(data) > 20_000  # a page with content, not a blank image
    keep = os.environ.get("TFGRADMIGRATE_SCREENSHOT_DIR")
    if keep:
        shutil.copy(shot, os.path.join(keep, "report.png"))
