"""The dashboard in Chromium against a real daemon driven by the `caldera` command, as a person uses both."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from caldera.testing.waiting import wait_until
from e2e.conftest import SLEEPER, Caldera, job_manifest, waits_for

from .conftest import TIMEOUT_MS, Tab

pytestmark = pytest.mark.browser


# A pod that says how its training goes, then trains on until it is stopped.
TRAINER = [
    "python",
    "-c",
    "import os, signal\n"
    "for epoch in range(1, 6): print(f'epoch {epoch}  worker {os.environ[\"CALDERA_INDEX\"]}  loss {2.3 / epoch:.3f}', flush=True)\n"
    "signal.pause()",
]


def gpu_job(name: str, command: list[str], *, replicas: int = 1, gpus: int = 1) -> dict[str, object]:
    return job_manifest(name, command, replicas=replicas, gpus=gpus)


def phase(daemon: Caldera, name: str) -> str:
    return str(daemon.json("get", name)["phase"])


def listed(daemon: Caldera) -> list[str]:
    return [j["name"] for j in daemon.json("list")]


def test_every_page_renders_without_console_errors_screenshots(tab: Tab, daemon: Caldera) -> None:
    daemon.apply(gpu_job("train", TRAINER, replicas=2))
    daemon.ok("queue", "create", "research", "--weight", "2")
    daemon.apply(job_manifest("huge", SLEEPER, gpus=3, queue="research"))  # no node has 3 GPUs: it waits, says why
    daemon.apply(job_manifest("quick", ["python", "-c", "print('done')"]))
    daemon.wait_job("train", lambda j: [p["phase"] for p in j["pods"]] == ["Running", "Running"], "train to run")
    daemon.wait_job("quick", lambda j: j["phase"] == "Completed", "quick to complete")
    daemon.wait_job("huge", lambda j: bool(j.get("waiting")), "huge to be said to wait")
    tab.log_in("/")

    tab.open("/")
    page = tab.page
    assert page.locator("[data-resource='nvidia.com/gpu'] .big").inner_text() == "2 / 4"
    assert page.locator("#queues tr[data-queue=default]").count() == 1
    assert "Running 1" in page.locator("#jobs-by-phase").inner_text()
    tab.shot("overview", docs=True)

    tab.open("/jobs")
    for name in ("train", "huge", "quick"):
        assert page.locator(f"#jobs tr[data-job='default/{name}']").count() == 1
    page.select_option("#filter-phase", "Completed")
    assert page.locator("#jobs tbody tr[data-job]").count() == 1 and "phase=Completed" in page.url
    page.select_option("#filter-phase", "")
    tab.shot("jobs")

    tab.open("/jobs/default/train")
    assert page.locator("#pods tbody tr").count() == 2
    assert page.locator("#events li").count() >= 4
    assert page.locator("#suspend").is_enabled() and page.locator("#delete").is_enabled()
    tab.shot("job", docs=True)

    tab.open("/jobs/default/huge")
    waiting = daemon.json("get", "huge")["waiting"]  # what `caldera get` and `describe` say
    expect(page.locator("#why")).to_contain_text(f"{waiting['reason']}: {waiting['message']}", timeout=TIMEOUT_MS)
    assert page.locator("#why").inner_text().startswith("Why it waits: ")
    tab.shot("job-waiting")

    tab.open("/nodes")
    assert page.locator(".node").count() == 2
    assert page.locator(".gpu.used").count() == 2 and page.locator(".gpu.virtual").count() == 4
    tab.shot("nodes")

    tab.open("/timeline")
    summary = page.locator("#timeline-summary").inner_text()
    assert summary.startswith(("3 runs", "4 runs")), summary  # train's two, quick's, huge's if placed
    tab.shot("timeline")

    page.goto(tab.url + "/docs")  # the API's interactive documentation: the description loaded with the session
    page.wait_for_selector(".opblock-tag", timeout=TIMEOUT_MS)
    assert page.locator(".opblock").count() > 20
    tab.shot("docs")


def test_a_job_submitted_from_the_cli_appears_live(tab: Tab, daemon: Caldera) -> None:
    tab.log_in("/jobs")
    tab.page.evaluate("window.__sameDocument = true")
    daemon.ok("submit", "pytorch", "--name", "fresh", "--workers", "1", "--", *SLEEPER)
    row = tab.page.locator("#jobs tr[data-job='default/fresh']")
    row.wait_for(timeout=TIMEOUT_MS)
    expect(row).to_contain_text("Running", timeout=TIMEOUT_MS)
    assert tab.page.evaluate("window.__sameDocument") is True  # no reload: it came through the watch
    daemon.ok("delete", "fresh")
    row.wait_for(state="detached", timeout=TIMEOUT_MS)


def test_logs_follow_and_can_be_searched(tab: Tab, daemon: Caldera, tmp_path: Path) -> None:
    go = tmp_path / "go"
    script = "print('first line', flush=True)\n" + waits_for(go, "second line")[2]
    daemon.apply(job_manifest("talker", ["python", "-c", script]))
    daemon.wait_job("talker", lambda j: j["pods"][0]["phase"] == "Running", "talker to run")
    tab.log_in("/jobs/default/talker")
    log = tab.page.locator("#log")
    expect(log).to_contain_text("first line", timeout=TIMEOUT_MS)
    assert "second line" not in log.inner_text()
    go.touch()
    expect(log).to_contain_text("second line", timeout=TIMEOUT_MS)
    expect(tab.page.locator("#log-status")).to_contain_text("end of log", timeout=TIMEOUT_MS)
    tab.page.fill("#log-search", "second")
    assert tab.page.locator("#log mark").inner_text() == "second"
    assert "first line" not in log.inner_text()


def test_suspend_and_delete_from_the_page(tab: Tab, daemon: Caldera) -> None:
    daemon.apply(job_manifest("victim", SLEEPER, replicas=2))
    daemon.wait_job("victim", lambda j: all(p["phase"] == "Running" for p in j["pods"]), "victim to run")
    tab.log_in("/jobs/default/victim")
    page = tab.page

    page.click("#delete")
    page.click("#confirm-cancel")  # thought better of it
    assert "victim" in listed(daemon)

    page.click("#suspend")
    assert "Suspend victim?" in page.locator("#confirm").inner_text()
    page.click("#confirm-ok")
    wait_until(lambda: phase(daemon, "victim") == "Aborted", timeout=60, what="victim to be suspended", interval=0.2)
    page.locator("#resume").wait_for(timeout=TIMEOUT_MS)  # the page saw it through the watch
    tab.shot("job-suspended")

    page.click("#delete")
    page.click("#confirm-ok")
    wait_until(lambda: "victim" not in listed(daemon), timeout=60, what="victim to be deleted", interval=0.2)
    page.locator("#gone").wait_for(timeout=TIMEOUT_MS)


def test_a_wrong_or_missing_token_gets_the_login_page_never_data(tab: Tab, daemon: Caldera) -> None:
    daemon.apply(job_manifest("private", SLEEPER))
    page = tab.page
    for path in ("/", "/jobs", "/jobs/default/private", "/nodes", "/timeline"):
        page.goto(tab.url + path)
        assert page.url.startswith(f"{tab.url}/login?next="), page.url
        assert page.locator("#token").count() == 1 and "private" not in page.locator("body").inner_text()
    tab.shot("login")

    page.fill("#token", tab.token + "x")
    page.click("button[type=submit]")
    assert page.locator(".error").inner_text() == "Wrong token." and "private" not in page.locator("body").inner_text()
    for api in ("/api/v1/overview", "/apis/batch.volcano.sh/v1alpha1/jobs", "/api/v1/watch?kind=Job"):
        status = page.evaluate("async (p) => (await fetch(p)).status", api)
        assert status == 401, api
    tab.errors.clear()  # the refused login and fetches were answered 401, as they should be

    tab.log_in("/jobs")
    assert page.url == f"{tab.url}/jobs"
    page.locator("#jobs tr[data-job='default/private']").wait_for(timeout=TIMEOUT_MS)
    # Logged in, the cookie alone still opens no API: only with the page's CSRF token.
    assert page.evaluate("async () => (await fetch('/api/v1/overview')).status") == 401
    token_shown = page.evaluate("document.cookie")
    assert tab.token not in token_shown and "caldera_session" not in token_shown  # HttpOnly
    tab.errors.clear()
    page.click("form.logout button")
    page.wait_for_url(f"{tab.url}/login", timeout=TIMEOUT_MS)
    page.goto(tab.url + "/jobs")
    assert page.url.startswith(f"{tab.url}/login?next=")
    daemon.ok("delete", "private")


def test_the_job_page_links_the_jobs_tensorboard(tab: Tab, daemon: Caldera, tmp_path: Path) -> None:
    manifest = job_manifest("boarded", SLEEPER)
    manifest["metadata"]["annotations"] = {"caldera.dev/tensorboard-logdir": str(tmp_path / "runs")}
    daemon.apply(manifest)
    url = daemon.ok("tensorboard", "boarded").strip()  # what `caldera tensorboard` prints
    tab.log_in("/jobs/default/boarded")
    link = tab.page.locator("#tensorboard")
    expect(link).to_have_attribute("href", url, timeout=TIMEOUT_MS)
    assert link.get_attribute("target") == "_blank" and link.get_attribute("rel") == "noopener"
    daemon.ok("delete", "boarded")  # its TensorBoard goes with it


def test_scale_an_elastic_job_from_the_page(tab: Tab, daemon: Caldera) -> None:
    manifest = job_manifest("stretchy", SLEEPER, replicas=3, min_available=2)
    manifest["spec"]["tasks"][0]["minAvailable"] = 2  # a task that may run with 2 to 3 pods: elastic
    daemon.apply(manifest)
    daemon.wait_job("stretchy", lambda j: [p["phase"] for p in j["pods"]] == ["Running"] * 3, "stretchy to run")
    tab.log_in("/jobs/default/stretchy")
    page = tab.page
    page.click("#scale-worker")
    assert "Between 2 and 3 replicas (now 3)" in page.locator("#confirm").inner_text()
    page.fill("#dialog-input", "2")
    page.click("#confirm-ok")
    daemon.wait_job("stretchy", lambda j: len(j["pods"]) == 2, "stretchy to have 2 pods")
    expect(page.locator("#pods tbody tr")).to_have_count(2, timeout=TIMEOUT_MS)
    daemon.ok("delete", "stretchy")


VIEWS_BEFORE_READY = """() => {
  const ready = performance.getEntriesByName('caldera:ready')[0].startTime;
  const views = /\\/(overview|jobtable|allocations|timeline|describe|info)(\\?|$)/;
  return performance.getEntriesByType('resource')
    .filter((r) => r.startTime < ready && views.test(new URL(r.name).pathname + new URL(r.name).search))
    .map((r) => r.name);
}"""


def test_each_page_draws_its_first_data_from_the_page_itself_then_stays_live(tab: Tab, daemon: Caldera) -> None:
    daemon.apply(job_manifest("inline", SLEEPER))
    daemon.wait_job("inline", lambda j: j["pods"][0]["phase"] == "Running", "inline to run")
    tab.log_in("/")
    page = tab.page
    for path in ("/", "/jobs", "/jobs/default/inline", "/nodes", "/timeline"):
        tab.open(path)
        assert page.evaluate(VIEWS_BEFORE_READY) == [], path  # no request for what the page came with
    page.evaluate("window.__sameDocument = true")
    page.fill("#timeline-job", "later")
    expect(page.locator("#timeline-summary")).to_contain_text("0 runs", timeout=TIMEOUT_MS)
    daemon.ok("submit", "pytorch", "--name", "later", "--workers", "1", "--", *SLEEPER)
    daemon.wait_job("later", lambda j: all(p["phase"] == "Running" for p in j["pods"]), "later to run")
    # The timeline reads its runs again (as columns) when pods change: later's show, with no reload.
    expect(page.locator("#timeline-summary")).not_to_contain_text("0 runs", timeout=TIMEOUT_MS)
    assert page.evaluate("window.__sameDocument") is True
    daemon.ok("delete", "later")
    daemon.ok("delete", "inline")
