"""Other operators' PodGroups and pods read as Volcano's scheduler reads them (pure functions)."""

from __future__ import annotations

import pytest

from caldera.backends.kube.convert import from_time
from caldera.backends.kube.foreign import (
    group_name,
    implicit_podgroup,
    owned_by_volcano_job,
    pod_from_api,
    podgroup_from_api,
)
from caldera.core import objects as o
from caldera.core.errors import ValidationError


def api_pod(**meta: object) -> dict[str, object]:
    return {
        "metadata": {"name": "p", "namespace": "ml", "uid": "u-1", **meta},
        "spec": {"schedulerName": "caldera", "priorityClassName": "high",
                 "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "2"}}}]},
        "status": {"phase": "Pending"},
    }  # fmt: skip


def test_a_pod_names_its_group_by_either_annotation_else_gets_one_of_its_own():
    assert group_name(api_pod(annotations={"scheduling.k8s.io/group-name": "g"})) == "g"
    assert group_name(api_pod(annotations={"scheduling.volcano.sh/group-name": "h"})) == "h"
    assert group_name(api_pod()) == "podgroup-u-1"
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-1", "controller": True}
    assert group_name(api_pod(ownerReferences=[rs])) == "podgroup-rs-1"
    assert group_name(api_pod(ownerReferences=[{**rs, "controller": False}])) == "podgroup-u-1"


def test_a_group_made_for_a_pod_is_owned_by_its_controller_else_by_the_pod_and_takes_its_queue():
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-1", "controller": True}
    pg, owners = implicit_podgroup(api_pod(ownerReferences=[rs], annotations={"scheduling.volcano.sh/queue-name": "q"}))
    # Named after its controller, as Volcano names it: one group for all the ReplicaSet's pods.
    assert (pg.metadata.name, pg.min_member, pg.queue, pg.priority_class_name) == ("podgroup-rs-1", 1, "q", "high")
    assert owners == [rs] and pg.min_resources == {"cpu": 2000.0}
    made, owners = implicit_podgroup(api_pod(creationTimestamp="2026-12-07T04:00:00Z"))
    assert [(r["kind"], r["uid"]) for r in owners] == [("Pod", "u-1")]
    # Created when its pod was: its wait counts from there (from 1970, it would be overdue at once).
    assert made.metadata.creation_timestamp == from_time("2026-12-07T04:00:00Z")


def test_only_what_no_volcano_job_owns_belongs_to_another_operator():
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j", "uid": "x"}
    batch = {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "y"}
    assert owned_by_volcano_job(api_pod(ownerReferences=[job]))
    assert not owned_by_volcano_job(api_pod(ownerReferences=[batch]))


def test_a_podgroup_is_read_with_volcanos_defaults_and_a_bad_field_is_named():
    pg = podgroup_from_api({"metadata": {"name": "g", "namespace": "ml", "uid": "g-1"},
                            "spec": {"minMember": 3, "minTaskMember": {"worker": 2}, "minResources": {"cpu": "3"}}})  # fmt: skip
    assert (pg.job, pg.min_member, pg.queue, pg.min_task_member) == ("podgroup:g", 3, "default", {"worker": 2})
    with pytest.raises(ValidationError, match=r"spec\.minMember"):
        podgroup_from_api({"metadata": {"name": "g"}, "spec": {"minMember": -1}})
    with pytest.raises(ValidationError, match=r"spec\.minResources"):
        podgroup_from_api({"metadata": {"name": "g"}, "spec": {"minResources": {"cpu": "lots"}}})
    with pytest.raises(ValidationError, match=r"spec\.minTaskMember"):
        podgroup_from_api({"metadata": {"name": "g"}, "spec": {"minTaskMember": {"w": "two"}}})


def test_a_pod_is_read_with_its_priority_node_and_task():
    body = api_pod(annotations={"volcano.sh/task-spec": "worker"})
    pod = pod_from_api(body, {"high": 100}.__getitem__)
    assert (pod.job, pod.task, pod.priority, pod.node_name) == ("podgroup:podgroup-u-1", "worker", 100, "")
    assert pod.spec.requests() == {"cpu": 2000.0} and pod.status.phase == o.POD_PENDING
    body["spec"] = {**body["spec"], "nodeName": "n-1", "priority": 7}  # type: ignore[dict-item]
    bound = pod_from_api(body, {"high": 100}.__getitem__)
    assert (bound.node_name, bound.priority, bound.status.phase) == ("n-1", 7, o.POD_RUNNING)


def test_a_pod_caldera_cannot_read_is_refused_naming_the_field():
    body = api_pod()
    body["spec"] = {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "x"}}}]}
    with pytest.raises(ValidationError, match=r"pod ml/p: spec\.containers\[0\]\.resources\.requests\.cpu"):
        pod_from_api(body, lambda _: 0)
