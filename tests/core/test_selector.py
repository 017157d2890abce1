"""Label selectors in kubectl's syntax."""

from __future__ import annotations

import re

import pytest

from caldera.core.selector import parse_selector

LABELS = {"team": "vision", "tier": "prod", "gpus": "4"}


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        pytest.param("", True, id="empty-matches-all"),
        pytest.param("team=vision", True, id="equals"),
        pytest.param("team==vision", True, id="double-equals"),
        pytest.param("team = vision", True, id="spaces"),
        pytest.param("team=speech", False, id="equals-other"),
        pytest.param("team!=speech", True, id="not-equals"),
        pytest.param("owner!=bob", True, id="not-equals-absent"),
        pytest.param("tier", True, id="exists"),
        pytest.param("owner", False, id="exists-absent"),
        pytest.param("!owner", True, id="does-not-exist"),
        pytest.param("!tier", False, id="does-not-exist-present"),
        pytest.param("team in (speech, vision)", True, id="in"),
        pytest.param("team notin (speech,vision)", False, id="notin"),
        pytest.param("owner notin (bob)", True, id="notin-absent"),
        pytest.param("gpus>2", True, id="greater"),
        pytest.param("gpus<2", False, id="less"),
        pytest.param("team=vision,tier in (prod,dev),!owner", True, id="all-hold"),
        pytest.param("team=vision,tier=dev", False, id="one-fails"),
        pytest.param("volcano.sh/job-type", False, id="prefixed-key"),
    ],
)
def test_matching(text: str, matches: bool) -> None:
    assert parse_selector(text).matches(LABELS) is matches


def test_no_labels_match_only_negations() -> None:
    assert parse_selector("!a,b!=c").matches(None)
    assert not parse_selector("a").matches(None)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        pytest.param("team in (a,b", "'(' without ')'", id="open-paren"),
        pytest.param("team=a)", "')' without '('", id="close-paren"),
        pytest.param("a=b,,c=d", "empty requirement", id="empty-part"),
        pytest.param("team in ()", "at least one value", id="empty-set"),
        pytest.param("gpus>many", "integer", id="gt-not-int"),
        pytest.param("bad key=x", "not a label key", id="space-in-key"),
        pytest.param("team=a b", "not a label", id="space-in-value"),
        pytest.param("team=" + "x" * 64, "not a label value", id="value-too-long"),
    ],
)
def test_bad_selectors_say_why(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(why)):
        parse_selector(text)
