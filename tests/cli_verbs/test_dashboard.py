"""`caldera dashboard`: the URL, where the token is (never the token), and a browser only where one can show."""

from __future__ import annotations

import webbrowser
from pathlib import Path

import pytest

from caldera.system.api import JSON

from .conftest import Run
from .fake_daemon import VerbsFake

URL = "http://127.0.0.1:41234"


@pytest.fixture
def opened(fake: VerbsFake, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    info = fake.info()

    def listening() -> JSON:
        return {**info, "listening": URL}

    monkeypatch.setattr(fake, "info", listening)
    monkeypatch.setenv("CALDERA_HOME", str(tmp_path / "home"))
    calls: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url: calls.append(url) or True)
    return calls


def test_prints_the_url_and_where_the_token_is(run: Run, opened: list[str], tmp_path: Path) -> None:
    r = run("dashboard", "--no-open")
    assert r.exit_code == 0 and r.stdout == f"{URL}/\n"
    assert r.stderr == f"log in with the token in {(tmp_path / 'home').resolve() / 'token'}\n"
    assert opened == []


def test_opens_a_browser_only_where_one_can_show(run: Run, opened: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr("sys.platform", "linux")
    assert run("dashboard").exit_code == 0 and opened == []
    monkeypatch.setenv("DISPLAY", ":0")
    assert run("dashboard").exit_code == 0 and opened == [f"{URL}/"]
    assert run("dashboard", "--no-open").exit_code == 0 and len(opened) == 1
    monkeypatch.delenv("DISPLAY")
    assert run("dashboard", "--open").exit_code == 0 and len(opened) == 2


def test_says_so_when_no_browser_opens(run: Run, opened: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webbrowser, "open", lambda url: False)
    r = run("dashboard", "--open")
    assert r.exit_code == 0 and r.stdout == f"{URL}/\n" and "no browser could be opened" in r.stderr
