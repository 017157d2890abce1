"""The dashboard's login over real HTTP: pages need a session, the API takes the session only with its
CSRF token from the same origin, a bearer token works as before, a token never goes in a URL."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from caldera.server.assets import asset_version
from caldera.server.auth import COOKIE, Sessions
from caldera.server.dashboard import STATIC
from caldera.testing.fake_cluster import FakeCluster
from caldera.utils.clock import ManualClock

from .helpers import AUTH, HTTP_TIMEOUT, JOBS, TOKEN, LiveServer, job_manifest

PAGES = ["/", "/jobs", "/jobs/default/train", "/nodes", "/timeline", "/docs"]


@pytest.fixture
def browser(live: LiveServer) -> Iterator[httpx.Client]:
    """A client that keeps cookies and does not follow redirects (each step is checked)."""
    with httpx.Client(base_url=live.url, timeout=HTTP_TIMEOUT, follow_redirects=False) as client:
        yield client


def origin(live: LiveServer) -> dict[str, str]:
    return {"Origin": live.url}


def log_in(browser: httpx.Client, live: LiveServer, token: str = TOKEN, next_path: str = "/") -> httpx.Response:
    return browser.post("/login", data={"token": token, "next": next_path}, headers=origin(live))


def csrf_of(page: httpx.Response) -> str:
    found = re.search(r'<meta name="caldera-csrf" content="([0-9a-f]+)">', page.text)
    assert found, page.text
    return found.group(1)


@pytest.mark.parametrize("path", PAGES)
def test_a_page_without_a_session_sends_to_the_login_page(browser: httpx.Client, path: str) -> None:
    r = browser.get(path)
    assert r.status_code == 303 and r.headers["location"] == f"/login?next={path}"
    login = browser.get(r.headers["location"])
    assert login.status_code == 200 and 'name="token"' in login.text and 'type="password"' in login.text


def test_the_login_page_shows_no_data(browser: httpx.Client, fake: FakeCluster) -> None:
    fake.apply(job_manifest("secret-job-name"))
    page = browser.get("/login")
    assert "secret-job-name" not in page.text and TOKEN not in page.text
    assert page.headers["cache-control"] == "no-store"


@pytest.mark.parametrize("token", ["wrong", "", TOKEN + "x", TOKEN[:-1]], ids=["wrong", "empty", "longer", "shorter"])
def test_a_wrong_token_gets_the_login_page_again_and_no_cookie(
    browser: httpx.Client, live: LiveServer, token: str
) -> None:
    r = log_in(browser, live, token)
    assert r.status_code == 401 and "Wrong token." in r.text and 'name="token"' in r.text
    assert "set-cookie" not in r.headers
    assert browser.get("/jobs").status_code == 303


def test_logging_in_sets_an_httponly_strict_cookie_that_is_not_the_token(
    browser: httpx.Client, live: LiveServer
) -> None:
    r = log_in(browser, live, next_path="/jobs?phase=Running")
    assert r.status_code == 303 and r.headers["location"] == "/jobs?phase=Running"
    cookie = r.headers["set-cookie"]
    assert (
        cookie.startswith(f"{COOKIE}=") and "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    )
    assert TOKEN not in cookie
    page = browser.get("/jobs")
    assert page.status_code == 200 and '<script type="module"' in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["cache-control"] == "no-store" and TOKEN not in page.text


@pytest.mark.parametrize("target", ["//evil.example/", "https://evil.example/", "/\\evil.example", "jobs"])
def test_login_goes_only_to_a_page_of_this_server(browser: httpx.Client, live: LiveServer, target: str) -> None:
    assert log_in(browser, live, next_path=target).headers["location"] == "/"


def test_a_login_posted_from_another_site_is_refused(browser: httpx.Client) -> None:
    r = browser.post("/login", data={"token": TOKEN}, headers={"Origin": "http://evil.example"})
    assert r.status_code == 403 and "set-cookie" not in r.headers
    r = browser.post("/login", data={"token": TOKEN}, headers={"Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 403 and "set-cookie" not in r.headers


def test_the_api_takes_the_session_only_with_its_csrf_token(
    browser: httpx.Client, live: LiveServer, fake: FakeCluster
) -> None:
    fake.apply(job_manifest())
    log_in(browser, live)
    csrf = csrf_of(browser.get("/"))
    jobs = f"{JOBS}/namespaces/default/jobs"
    assert browser.get(jobs).status_code == 401  # the cookie alone: refused
    assert browser.get(jobs, headers={"X-Caldera-CSRF": "0" * 64}).status_code == 401
    ok = browser.get(jobs, headers={"X-Caldera-CSRF": csrf})
    assert ok.status_code == 200 and ok.json()["items"][0]["name"] == "train"
    cross = {"X-Caldera-CSRF": csrf, "Origin": "http://evil.example"}
    assert browser.get(jobs, headers=cross).status_code == 401
    assert browser.get(jobs, headers={"X-Caldera-CSRF": csrf, "Sec-Fetch-Site": "cross-site"}).status_code == 401
    same = {"X-Caldera-CSRF": csrf, "Origin": live.url, "Sec-Fetch-Site": "same-origin"}
    assert browser.get(jobs, headers=same).status_code == 200


def test_a_mutating_request_needs_the_csrf_token(browser: httpx.Client, live: LiveServer, fake: FakeCluster) -> None:
    fake.apply(job_manifest())
    log_in(browser, live)
    csrf = csrf_of(browser.get("/jobs"))
    command = f"{JOBS}/namespaces/default/jobs/train/commands"
    refused = browser.post(command, json={"action": "AbortJob"}, headers=origin(live))
    assert refused.status_code == 401 and fake.commands == []
    assert browser.delete(f"{JOBS}/namespaces/default/jobs/train", headers=origin(live)).status_code == 401
    assert ("default", "train") in fake.jobs
    done = browser.post(command, json={"action": "AbortJob"}, headers={**origin(live), "X-Caldera-CSRF": csrf})
    assert done.status_code == 200 and fake.commands == [("default", "train", "AbortJob")]


def test_the_csrf_token_of_another_session_does_not_do(live: LiveServer, fake: FakeCluster) -> None:
    with (
        httpx.Client(base_url=live.url, timeout=HTTP_TIMEOUT) as one,
        httpx.Client(base_url=live.url, timeout=HTTP_TIMEOUT) as two,
    ):
        for c in (one, two):
            log_in(c, live)
        other = csrf_of(two.get("/"))
        assert one.get("/info", headers={"X-Caldera-CSRF": other}).status_code == 401
        assert one.get("/info", headers={"X-Caldera-CSRF": csrf_of(one.get("/"))}).status_code == 200


def test_a_forged_or_foreign_cookie_is_no_session(browser: httpx.Client, live: LiveServer) -> None:
    log_in(browser, live)
    real = browser.cookies[COOKIE]
    issued, nonce, mac = real.split(".")
    for forged in (f"{int(issued) + 1}.{nonce}.{mac}", f"{issued}.{nonce}.{'0' * 64}", TOKEN, "garbage"):
        browser.cookies.set(COOKIE, forged)
        assert browser.get("/").status_code == 303
    other = Sessions("another-token", ManualClock(0.0))
    browser.cookies.set(COOKIE, other.issue())
    assert browser.get("/").status_code == 303


def test_a_bearer_token_works_as_before_and_never_in_a_url(live: LiveServer) -> None:
    assert httpx.get(f"{live.url}/info", headers=AUTH, timeout=HTTP_TIMEOUT).status_code == 200
    for query in (f"token={TOKEN}", f"access_token={TOKEN}", f"authorization=Bearer%20{TOKEN}"):
        assert httpx.get(f"{live.url}/info?{query}", timeout=HTTP_TIMEOUT).status_code == 401
        assert httpx.get(f"{live.url}/?{query}", follow_redirects=False, timeout=HTTP_TIMEOUT).status_code == 303


def test_logging_out_needs_the_csrf_token_and_ends_the_session(browser: httpx.Client, live: LiveServer) -> None:
    log_in(browser, live)
    csrf = csrf_of(browser.get("/"))
    assert browser.post("/logout", data={"csrf": "nope"}, headers=origin(live)).status_code == 403
    assert browser.get("/").status_code == 200
    out = browser.post("/logout", data={"csrf": csrf}, headers=origin(live))
    assert out.status_code == 303 and out.headers["location"] == "/login"
    assert f"{COOKIE}=;" in out.headers["set-cookie"] and "Max-Age=0" in out.headers["set-cookie"]
    assert browser.get("/").status_code == 303


def test_a_session_expires() -> None:
    clock = ManualClock(1_000_000.0)
    sessions = Sessions(TOKEN, clock, max_age=60)
    value = sessions.issue()
    assert sessions.valid(value) and sessions.csrf_matches(value, sessions.csrf(value))
    clock.advance(59)
    assert sessions.valid(value)
    clock.advance(1)
    assert not sessions.valid(value)
    assert not Sessions("another-token", clock).valid(sessions.issue())  # a new token ends every session


def test_static_files_need_no_session_and_are_cached_for_good(browser: httpx.Client) -> None:
    v = asset_version(STATIC)
    for path in ("app.css", "icon.svg", "js/api.js", "js/jobs.js"):
        r = browser.get(f"/static/{v}/{path}")
        assert r.status_code == 200, path
        assert "immutable" in r.headers["cache-control"] and r.headers["x-content-type-options"] == "nosniff"
    assert browser.get("/static/0000/app.css").status_code == 404
    assert browser.get(f"/static/{v}/js/nope.js").status_code == 404
    assert browser.get(f"/static/{v}/../auth.py").status_code == 404
    assert "javascript" in browser.get(f"/static/{v}/js/api.js").headers["content-type"]
    css = browser.get(f"/static/{v}/app.css")
    assert css.content == (STATIC / "app.css").read_bytes() and css.headers["content-type"] == "text/css; charset=utf-8"
    head = browser.head(f"/static/{v}/app.css")
    assert head.status_code == 200 and head.content == b"" and head.headers["content-length"] == str(len(css.content))
    assert browser.post(f"/static/{v}/app.css").status_code == 405


def test_a_page_preloads_every_module_it_imports(browser: httpx.Client, live: LiveServer) -> None:
    log_in(browser, live)
    v = asset_version(STATIC)
    for path, module, imports in [
        ("/jobs", "jobs", {"api.js", "dom.js", "live.js", "rows.js"}),  # rows.js: imported by jobs.js only
        ("/timeline", "timeline", {"api.js", "dom.js", "live.js", "gantt.js"}),
        ("/jobs/default/train", "job", {"api.js", "dom.js", "live.js", "dialog.js", "logs.js"}),
    ]:
        page = browser.get(path).text
        assert f'<script type="module" src="/static/{v}/js/{module}.js">' in page
        assert set(re.findall(rf'<link rel="modulepreload" href="/static/{v}/js/([a-z]+\.js)">', page)) == imports
        for name in imports:
            assert browser.get(f"/static/{v}/js/{name}").status_code == 200


def test_the_interactive_docs_are_a_page_behind_the_login_served_from_here(
    browser: httpx.Client, live: LiveServer
) -> None:
    assert browser.get("/docs", params={"token": TOKEN}).status_code == 303  # a token in a URL opens nothing
    log_in(browser, live, next_path="/docs")
    page = browser.get("/docs")
    assert page.status_code == 200 and 'id="swagger-ui"' in page.text
    scripts = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert scripts and all(s.startswith("/") for s in scripts), scripts  # nothing from another origin
    assert all(browser.get(s).status_code == 200 for s in scripts)
    # Swagger UI's requests carry the session's CSRF token (static/js/docs.js); the cookie alone opens nothing.
    assert browser.get("/openapi.json").status_code == 401
    spec = browser.get("/openapi.json", headers={"X-Caldera-CSRF": csrf_of(page), **origin(live)})
    assert spec.status_code == 200 and spec.json()["info"]["title"] == "caldera"
