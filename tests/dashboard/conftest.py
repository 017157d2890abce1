"""The dashboard in a real browser: Debian's Chromium driven by Playwright, against a real daemon.

Chromium runs headless with background networking off and a fresh profile (Playwright makes
one per launch); Playwright's own browser download is never used. Every page a test opens
collects its console errors and uncaught exceptions, and the test fails if there are any
(a test expecting one clears `errors`). Screenshots go to the session's tmp dir; with
CALDERA_DOCS_SCREENSHOTS=1 (`make screenshots`) the two the README shows are copied to docs/.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from e2e.conftest import REPO, Caldera, bring_down

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DOCS = REPO / "docs" / "images"
TIMEOUT_MS = 30_000  # a loaded 2-core machine: generous

if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (make does, as root)", allow_module_level=True)

from playwright.sync_api import Browser, ConsoleMessage, Page, Playwright, sync_playwright  # noqa: E402


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def chromium(playwright: Playwright) -> Iterator[Browser]:
    browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
    try:
        yield browser
    finally:
        browser.close()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Caldera]:
    """One daemon for the module: two virtual nodes of two GPUs; down (and checked) at the end."""
    cal = Caldera(tmp_path_factory.mktemp("dashboard") / "home")
    try:
        cal.up("--nodes", "2", "--gpus-per-node", "2", "--cpus-per-node", "2", "--memory-per-node", "4Gi")
        yield cal
    finally:
        bring_down(cal)


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("screenshots")


@dataclass
class Tab:
    """A page in a fresh browser context (no cookies), and what went wrong in it."""

    page: Page
    url: str
    token: str
    shots: Path
    errors: list[str] = field(default_factory=list)

    def open(self, path: str) -> None:
        """Go to `path` and wait until its first data is on screen."""
        self.page.goto(self.url + path)
        self.page.wait_for_selector("html[data-ready=true]", timeout=TIMEOUT_MS)

    def log_in(self, path: str = "/") -> None:
        self.page.goto(self.url + path)
        self.page.fill("#token", self.token)
        self.page.click("button[type=submit]")
        self.page.wait_for_selector("html[data-ready=true]", timeout=TIMEOUT_MS)

    def shot(self, name: str, docs: bool = False) -> Path:
        path = self.shots / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        if docs and os.environ.get("CALDERA_DOCS_SCREENSHOTS"):
            DOCS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, DOCS / f"dashboard-{name}.png")
        return path


@pytest.fixture
def tab(chromium: Browser, daemon: Caldera, screenshots: Path) -> Iterator[Tab]:
    context = chromium.new_context(viewport={"width": 1360, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    url = daemon.ok("dashboard", "--no-open").strip().rstrip("/")
    t = Tab(page, url, (daemon.home / "token").read_text().strip(), screenshots)

    def console(message: ConsoleMessage) -> None:
        if message.type == "error":
            t.errors.append(f"console: {message.text} ({message.location.get('url')})")

    page.on("console", console)
    page.on("pageerror", lambda e: t.errors.append(f"uncaught: {e}"))
    try:
        yield t
        assert t.errors == [], "errors in the page"
    finally:
        context.close()
