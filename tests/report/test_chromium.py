"""The HTML report as a browser shows it: headless Chromium (Debian's ``chromium``, which
``.ci/run`` installs) loads the page through the DevTools protocol; the DOM it built has the
plots, the tables and the frontier, and the page's network log has no request but the page."""
from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from ek_agents.report.htmlreport import render_html
from ek_agents.report.runsummary import load_runs

from .reportkit import DevToolsPage, chromium_or_skip

BINARY = chromium_or_skip()


@pytest.fixture(scope="module")
def page(stored_runs, tmp_path_factory) -> Path:
    root, ids = stored_runs
    path = tmp_path_factory.mktemp("report-html") / "report.html"
    path.write_text(render_html(load_runs(root, ids)), encoding="utf-8")
    return path


@pytest.fixture
def browser(tmp_path):
    b = DevToolsPage(BINARY, str(tmp_path / "profile"))
    yield b
    b.close()


def test_chromium_renders_plots_tables_and_frontier_without_any_request(page, browser):
    browser.open(page.as_uri())
    dom = browser.dom()
    # the plots, as SVG elements of the DOM Chromium built
    assert re.search(r'<svg[^>]*class="ek-plot"[^>]*data-plot="cost-vs-success"', dom)
    assert len(re.findall(r'data-plot="pass-hat-k"', dom)) == 6 and 'data-plot="series"' in dom
    assert len(re.findall(r'<g class="run-point whisker"', dom)) == 6
    assert re.search(r'<polyline class="frontier" data-group="0" points="[\d.,\s]+"', dom)
    # the tables
    overview = re.search(r'<table class="overview">.*?</table>', dom, re.S).group(0)
    assert overview.count("<tr>") == 7                    # header + six runs
    assert len(re.findall(r'<table class="slices">', dom)) == 6
    assert "Gate vs baseline" in dom
    # nothing outside the page: the page's only request was the page itself; no remote
    # resource in the DOM; a CSP that would block any load
    assert browser.requests == [page.as_uri()] and browser.blocked == []
    assert not re.search(r'(?:src|href|xlink:href)\s*=\s*"(?:https?:)?//', dom)
    assert not re.search(r"url\(\s*['\"]?(?:https?:)?//", dom)
    assert re.search(r'http-equiv="Content-Security-Policy" content="default-src \'none\';', dom)
    # and a screenshot of it is a drawn page of the window's size
    png = browser.screenshot()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == (1240, 1300)
    assert len(png) > 20_000


def test_the_network_check_sees_a_fetch_and_the_csp_blocks_it(page, tmp_path, browser):
    """The check can fail: a remote image on a page without the CSP is requested; injected
    into the report page, the same image is blocked by its CSP before any request."""
    img = '<img src="http://report-test.invalid/pixel.png">'
    bare = tmp_path / "bare.html"
    bare.write_text(f"<!DOCTYPE html><html><body>{img}</body></html>", encoding="utf-8")
    browser.open(bare.as_uri())
    assert "http://report-test.invalid/pixel.png" in browser.requests
    browser.requests.clear()
    tampered = tmp_path / "tampered.html"
    tampered.write_text(page.read_text(encoding="utf-8").replace("</body>", img + "</body>"),
                        encoding="utf-8")
    browser.open(tampered.as_uri())
    assert browser.requests == [tampered.as_uri()]
    assert browser.blocked == [("http://report-test.invalid/pixel.png", "csp")]
