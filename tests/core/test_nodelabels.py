"""Node labels and taints as people write them (caldera up, caldera node), and how the embedded cluster keeps them."""

from __future__ import annotations

import re

import pytest

from caldera.core import objects as o
from caldera.core.errors import ValidationError
from caldera.core.nodelabels import node_labels_flag, node_taints_flag, parse_label, parse_taint, parse_taint_removal
from caldera.system import nodeconfig


def test_labels_and_taints_in_kubectls_forms() -> None:
    assert parse_label("gpu=a100") == ("gpu", "a100")
    assert parse_label("example.com/zone-") == ("example.com/zone", None)
    assert parse_taint("dedicated=infra:NoSchedule") == o.Taint("dedicated", "infra", "NoSchedule")
    assert parse_taint("spot:PreferNoSchedule") == o.Taint("spot", "", "PreferNoSchedule")
    assert parse_taint_removal("spot-") == ("spot", "")
    assert parse_taint_removal("spot:NoExecute-") == ("spot", "NoExecute")


@pytest.mark.parametrize(
    ("parse", "text", "why"),
    [
        pytest.param(parse_label, "gpu", "is not a label K=V", id="no-value"),
        pytest.param(parse_label, "bad key=x", "not a label key", id="bad-key"),
        pytest.param(parse_taint, "gpu=a100", "is not a taint K[=V]:EFFECT", id="no-effect"),
        pytest.param(parse_taint, "gpu:Sometimes", "is not a taint", id="bad-effect"),
        pytest.param(node_labels_flag, "gpu-", "nothing to remove", id="removal-at-start"),
    ],
)
def test_bad_text_says_why(parse: object, text: str, why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(why)):
        parse(text)  # type: ignore[operator]


def test_up_flags_name_every_node_or_one() -> None:
    assert node_labels_flag("gpu=a100,zone=a") == (None, {"gpu": "a100", "zone": "a"})
    assert node_labels_flag("node-1:gpu=a100") == ("node-1", {"gpu": "a100"})
    assert node_taints_flag("spot:NoSchedule,k=v:NoExecute") == (
        None,
        [o.Taint("spot", "", "NoSchedule"), o.Taint("k", "v", "NoExecute")],
    )
    assert node_taints_flag("node-0:k=v:NoSchedule") == ("node-0", [o.Taint("k", "v", "NoSchedule")])


def nodes() -> list[o.Node]:
    meta = [
        o.ObjectMeta(name=f"node-{i}", namespace="", labels={"kubernetes.io/hostname": f"node-{i}"}) for i in (0, 1)
    ]
    return [o.Node(m, allocatable={"cpu": 1000.0}) for m in meta]


def test_overrides_lie_over_the_planned_nodes_and_are_changed_one_node_at_a_time() -> None:
    overrides = nodeconfig.with_flags(
        nodeconfig.empty(), nodes(), ["zone=a", "node-1:gpu=a100"], ["node-0:k=v:NoSchedule"]
    )
    n0, n1 = nodeconfig.apply(nodes(), overrides)
    assert n0.labels == {"kubernetes.io/hostname": "node-0", "zone": "a"} and n0.taints == (
        o.Taint("k", "v", "NoSchedule"),
    )
    assert n1.labels == {"kubernetes.io/hostname": "node-1", "zone": "a", "gpu": "a100"} and n1.taints == ()
    changed = nodeconfig.patch(
        nodes()[1], overrides, {"gpu": None, "rack": "3"}, [{"key": "spot", "effect": "NoExecute"}]
    )
    _, n1 = nodeconfig.apply(nodes(), changed)
    assert n1.labels == {"kubernetes.io/hostname": "node-1", "zone": "a", "rack": "3"}
    assert n1.taints == (o.Taint("spot", "", "NoExecute"),)


@pytest.mark.parametrize(
    ("labels", "taints", "path"),
    [
        pytest.param({"kubernetes.io/hostname": "x"}, None, "metadata.labels.kubernetes.io/hostname", id="own-label"),
        pytest.param({"caldera.dev/gpu-offset": "4"}, None, "metadata.labels.caldera.dev/gpu-offset", id="caldera"),
        pytest.param({"never-set": None}, None, "metadata.labels.never-set", id="remove-absent"),
        pytest.param(None, [{"key": "k", "effect": "Sometimes"}], "spec.taints[0]", id="bad-taint"),
    ],
)
def test_patches_the_cluster_cannot_take_are_refused(
    labels: dict[str, str | None] | None, taints: list[object] | None, path: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        nodeconfig.patch(nodes()[0], nodeconfig.empty(), labels, taints)
    assert [e.path for e in caught.value.errors] == [path]


def test_an_up_flag_naming_no_node_is_refused() -> None:
    with pytest.raises(ValidationError, match="there is no node 'node-7'"):
        nodeconfig.with_flags(nodeconfig.empty(), nodes(), ["node-7:gpu=a100"], [])
