"""The documentation site: every example in it runs, it builds with ``mkdocs build --strict``
without a warning, every command line it shows is one the parser accepts, and headless
Chromium shows its pages and finds ``run_suite`` with its search.

Conventions of ``docs/**/*.md`` (and README.md): a ```` ```python ```` block is executed (a
page's blocks in order, in one namespace, in a fresh working directory, in a subprocess of its
own so that what an example instruments or starts cannot leak into other tests); a
```` ```pycon ```` block is a doctest; ```` ```console ````, ```` ```text ````, ```` ```yaml ````
and ```` ```json ```` blocks are shown only, and the ``ek-agents`` command lines among them are
checked against the parser.
"""
from __future__ import annotations

import argparse
import doctest
import functools
import http.server
import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from ek_agents.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "_hooks" not in p.parts)
FENCE = re.compile(r"^( *)```([a-z]*)\n(.*?)^\1```", re.S | re.M)


def blocks(path: Path, lang: str) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return [textwrap.dedent(body) for _, kind, body in FENCE.findall(text) if kind == lang]


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_pages_are_found_and_hold_examples():
    assert len(PAGES) >= 15
    assert sum(len(blocks(p, "python")) for p in PAGES) >= 7
    # an unknown fence language would be neither run nor checked: refuse it
    known = {"python", "pycon", "console", "text", "yaml", "json"}
    for page in PAGES + [ROOT / "README.md"]:
        kinds = {kind for _, kind, _ in FENCE.findall(page.read_text(encoding="utf-8"))}
        assert kinds <= known, f"{_rel(page)}: code blocks of kind {kinds - known} (use one of {known})"


@pytest.mark.parametrize("page", [p for p in PAGES + [ROOT / "README.md"] if blocks(p, "python")],
                         ids=_rel)
def test_python_blocks_run(page, tmp_path):
    script = "\n\n".join(blocks(page, "python"))
    env = dict(os.environ, PYTHONWARNINGS="ignore", EK_STORE=str(tmp_path / ".ek"))
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{_rel(page)}: its python blocks failed:\n{done.stderr[-3000:]}"


@pytest.mark.parametrize("page", [p for p in PAGES + [ROOT / "README.md"] if blocks(p, "pycon")],
                         ids=_rel)
def test_pycon_blocks_are_doctests(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    globs: dict = {}
    for i, body in enumerate(blocks(page, "pycon")):
        runner.run(parser.get_doctest(body, globs, f"{_rel(page)}[{i}]", str(page), 0))
    assert runner.failures == 0 and runner.tries > 0


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def command_lines(text: str) -> list[str]:
    """Each ``ek-agents ...`` command of the console blocks, continuation lines joined."""
    out = []
    for _, kind, body in FENCE.findall(text):
        if kind != "console":
            continue
        for line in body.replace("\\\n", " ").splitlines():
            line = line.split("  #")[0].split(" # ")[0]
            m = re.match(r"^\s*(?:[A-Z_]+=\S+\s+)*(ek-agents\s.*)", line)
            if m:
                out.append(m.group(1))
    return out


def test_every_command_line_shown_is_one_the_parser_has():
    commands = _subcommands()
    seen = 0
    for page in PAGES + [ROOT / "README.md"]:
        for line in command_lines(page.read_text(encoding="utf-8")):
            words = shlex.split(line.replace("[", " ").replace("]", " ").replace("|", " "))
            words = [w for w in words[1:] if w != "-v"]
            assert words and words[0] in commands, f"{_rel(page)}: unknown command in {line!r}"
            known = {o for a in commands[words[0]]._actions for o in a.option_strings}
            for w in words[1:]:
                if w.startswith("--"):
                    assert w.split("=")[0] in known, f"{_rel(page)}: {words[0]} has no option {w}: {line!r}"
            seen += 1
    assert seen >= 20


def test_the_command_check_can_fail():
    bad = "```console\nek-agents run --suite s.yaml --no-such-option\n```\n"
    line = command_lines(bad)[0]
    known = {o for a in _subcommands()["run"]._actions for o in a.option_strings}
    assert "--no-such-option" not in known and line.startswith("ek-agents run")


def test_the_readme_is_a_front_page_whose_links_resolve():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 150
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [link for link in links if "://" not in link]
    assert len(local) >= 10
    for link in local:
        assert (ROOT / link).exists(), f"README links to {link}, which does not exist"


def test_every_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in PAGES:
        assert str(page.relative_to(DOCS)) in nav, f"{_rel(page)} is not in mkdocs.yml's nav"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    warnings = [ln for ln in done.stderr.splitlines() if "WARNING" in ln or "ERROR" in ln]
    assert warnings == [], warnings
    return out


def test_mkdocs_builds_strict_with_the_generated_references(site):
    cli = (site / "reference" / "cli.html").read_text(encoding="utf-8")
    for name, cmd in _subcommands().items():
        assert f"ek-agents {name}" in cli
        for action in cmd._actions:
            for opt in action.option_strings:
                if opt.startswith("--") and action.help != argparse.SUPPRESS and opt != "--help":
                    assert f"<code>{opt}</code>" in cli, f"the CLI reference lacks {name} {opt}"
    api = (site / "reference" / "python.html").read_text(encoding="utf-8")
    assert 'id="ek_agents.run_suite"' in api and "max_concurrency" in api


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def _serve(root: Path):
    handler = functools.partial(_Quiet, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def test_chromium_shows_the_site_and_its_search_finds_run_suite(site, tmp_path):
    from .report.reportkit import DevToolsPage, chromium_binary

    binary = chromium_binary()
    if binary is None:
        if os.environ.get("CI") or os.environ.get("EK_REQUIRE_CHROMIUM"):
            raise RuntimeError("chromium is not installed: .ci/run installs it")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    httpd = _serve(site)
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    page = DevToolsPage(binary, str(tmp_path / "profile"))
    try:
        def text_of(selector: str) -> str:
            return page.send("Runtime.evaluate", returnByValue=True, expression=(
                f"Array.from(document.querySelectorAll({json.dumps(selector)}))"
                ".map(e => e.innerText).join('\\n')"))["result"].get("value", "")

        page.open(f"{base}/index.html")
        assert "dollars per successfully" in text_of("article")
        page.open(f"{base}/reference/cli.html")
        assert "ek-agents run" in text_of("article h3") and "--max-concurrency" in text_of("table")
        page.open(f"{base}/reference/python.html")
        assert "run_suite" in text_of("article h2, article h3, article h4")
        page.send("Runtime.evaluate", expression=(
            "const i = document.querySelector('input.md-search__input'); i.focus();"
            "i.value = 'run_suite'; i.dispatchEvent(new Event('input', {bubbles: true}));"
            "i.dispatchEvent(new KeyboardEvent('keyup', {bubbles: true, key: 'e'}));"))
        found = page.send("Runtime.evaluate", awaitPromise=True, returnByValue=True, expression=(
            "new Promise(done => { let n = 0; const t = setInterval(() => {"
            " const r = Array.from(document.querySelectorAll('.md-search-result__item'))"
            "   .map(e => e.innerText).join('\\n');"
            " if (r || ++n > 100) { clearInterval(t); done(r); } }, 100); })"))["result"]["value"]
        assert "run_suite" in found
        # nothing but this site was requested: no fonts, scripts or analytics from elsewhere
        elsewhere = [u for u in page.requests if not u.startswith((base, "data:", "blob:"))]
        assert page.requests and elsewhere == [], elsewhere
    finally:
        page.close()
        httpd.shutdown()
