"""A long page comes with only its first screen and reads the rest right after: the nodes page of a
daemon with more nodes than the page draws first, in Chromium."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from caldera.server.firstview import FIRST_NODES
from e2e.conftest import Caldera, bring_down

from .conftest import TIMEOUT_MS, Tab
from .test_dashboard import VIEWS_BEFORE_READY

pytestmark = pytest.mark.browser
NODES = FIRST_NODES + 2

VIEWS_AFTER_READY = """() => {
  const ready = performance.getEntriesByName('caldera:ready')[0].startTime;
  return performance.getEntriesByType('resource')
    .filter((r) => r.startTime >= ready && new URL(r.name).pathname === '/api/v1/allocations').length;
}"""


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Caldera]:
    """More nodes than the nodes page draws first."""
    cal = Caldera(tmp_path_factory.mktemp("first-screen") / "home")
    try:
        cal.up("--nodes", str(NODES), "--gpus-per-node", "1", "--cpus-per-node", "1", "--memory-per-node", "1Gi")
        yield cal
    finally:
        bring_down(cal)


def test_the_nodes_page_draws_its_first_nodes_from_the_page_then_every_node(tab: Tab, daemon: Caldera) -> None:
    tab.log_in("/nodes")
    page = tab.page
    assert page.evaluate(VIEWS_BEFORE_READY) == []  # the first cards came with the page
    expect(page.locator(".node")).to_have_count(NODES, timeout=TIMEOUT_MS)  # the rest read right after
    assert page.locator("#nodes-summary").inner_text().startswith(f"{NODES} nodes")
    assert page.evaluate(VIEWS_AFTER_READY) == 1
    names = page.locator(".node").evaluate_all("(cards) => cards.map((c) => c.dataset.node)")
    assert names == [f"node-{i}" for i in range(NODES)], names  # in order, each once
    tab.shot("nodes-many")
