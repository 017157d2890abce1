"""Tasks read once and handed out again (jobmanifest.py): the same as reading them afresh, errors included."""

from __future__ import annotations

import pytest
from manifest_builders import container_manifest, job_manifest, messages, task_manifest

from caldera.core.errors import ValidationError
from caldera.core.manifest import parse_job


def test_the_same_task_in_two_jobs_reads_equal_and_is_kept() -> None:
    first = parse_job(job_manifest(name="a", tasks=[task_manifest()]))
    second = parse_job(job_manifest(name="b", tasks=[task_manifest()]))
    assert second.spec.tasks[0] == first.spec.tasks[0]
    assert second.spec.tasks[0] is first.spec.tasks[0]  # read once


def test_what_the_job_lends_its_tasks_is_part_of_what_is_kept() -> None:
    plain = parse_job(job_manifest(name="a", tasks=[task_manifest()]))
    high = parse_job(job_manifest(name="b", tasks=[task_manifest()], priorityClassName="high"))
    other = parse_job(job_manifest(name="c", tasks=[task_manifest()], schedulerName="kube"))
    assert plain.spec.tasks[0].template.spec.priority_class_name == ""
    assert high.spec.tasks[0].template.spec.priority_class_name == "high"
    assert other.spec.tasks[0].template.spec.scheduler_name == "kube"


@pytest.mark.parametrize(
    ("replicas", "expected"),
    [pytest.param(2, 2, id="int"), pytest.param(3, 3, id="other-int")],
)
def test_a_different_value_is_a_different_task(replicas: int, expected: int) -> None:
    parse_job(job_manifest(name="a", tasks=[task_manifest(replicas=2)]))
    assert (
        parse_job(job_manifest(name="b", tasks=[task_manifest(replicas=replicas)])).spec.tasks[0].replicas == expected
    )


def test_a_value_of_another_type_is_not_taken_for_a_kept_one() -> None:
    parse_job(job_manifest(name="a", tasks=[task_manifest(replicas=2)]))
    with pytest.raises(ValidationError) as info:
        parse_job(job_manifest(name="b", tasks=[task_manifest(replicas="2")]))
    assert "spec.tasks[0].replicas" in messages(info.value)[0]


def test_a_task_with_a_problem_names_its_own_path_every_time() -> None:
    bad = task_manifest(name="w", containers=[container_manifest(resources={"requests": {"cpu": "lots"}})])
    for name, tasks, path in (
        ("a", [bad], "spec.tasks[0].template.spec.containers[0].resources.requests.cpu"),
        ("b", [task_manifest(name="ok"), bad], "spec.tasks[1].template.spec.containers[0].resources.requests.cpu"),
    ):
        with pytest.raises(ValidationError) as info:
            parse_job(job_manifest(name=name, tasks=tasks))
        assert [e.path for e in info.value.errors] == [path], messages(info.value)
