"""YAML streams: documents, syntax errors with line numbers, and dispatch on apiVersion and kind."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from manifest_builders import job_manifest, queue_manifest

from caldera.core.errors import ValidationError
from caldera.core.manifest import load_documents, load_objects, parse_object
from caldera.core.objects import Job, PriorityClass, Queue

STREAM = """\
# a queue, a priority class and a job in one file
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: research
spec:
  weight: 2
---
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: high
value: 1000
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: mnist
spec:
  queue: research
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        containers:
        - name: main
          image: python:3.11
"""


def test_multi_document_stream_skips_empty_documents() -> None:
    docs = load_documents(STREAM, "all.yaml")
    assert [d["kind"] for d in docs] == ["Queue", "PriorityClass", "Job"]


def test_load_objects_parses_each_kind() -> None:
    queue, pc, job = load_objects(STREAM, "all.yaml")
    assert isinstance(queue, Queue) and queue.spec.weight == 2
    assert isinstance(pc, PriorityClass) and pc.value == 1000
    assert isinstance(job, Job) and job.spec.queue == "research"


def test_empty_stream_has_no_documents() -> None:
    assert load_documents("# nothing here\n---\n", "empty.yaml") == []


@pytest.mark.parametrize(
    ("text", "line"),
    [
        pytest.param("kind: Job\nspec:\n  tasks: [\n", 4, id="unclosed-flow-list"),
        pytest.param("kind: Job\nmetadata:\n  name: a\n   bad: indent\n", 4, id="bad-indentation"),
        pytest.param("kind: Job\nspec:\n\t- tab\n", 3, id="tab"),
        pytest.param("a: 1\n---\nkind: Job\nkind: Queue\n", 4, id="duplicate-key"),
    ],
)
def test_yaml_syntax_error_names_the_line(text: str, line: int) -> None:
    with pytest.raises(ValidationError) as info:
        load_documents(text, "bad.yaml")
    (error,) = info.value.errors
    assert f"YAML syntax error at line {line}," in error.rule
    assert str(info.value).startswith("bad.yaml: YAML syntax error")


def test_duplicate_key_says_which() -> None:
    with pytest.raises(ValidationError, match="found duplicate key 'kind'"):
        load_documents("kind: Job\nkind: Queue\n", "dup.yaml")


def test_merge_keys_are_not_duplicates() -> None:
    (doc,) = load_documents("base: &b {x: 1}\nother:\n  <<: *b\n  x: 2\n", "merge.yaml")
    assert doc["other"] == {"x": 2}


def test_non_mapping_document_names_its_index() -> None:
    with pytest.raises(ValidationError) as info:
        load_documents("a: 1\n---\n- just\n- a list\n---\nb: 2\n---\nplain text\n", "mixed.yaml")
    assert [str(e) for e in info.value.errors] == [
        "document[1]: must be a mapping with apiVersion and kind, not a list",
        "document[3]: must be a mapping with apiVersion and kind, not a string",
    ]


def test_errors_of_all_documents_are_reported_with_their_index() -> None:
    text = yaml.safe_dump_all([queue_manifest(weight=0.5), job_manifest(queue=[])])
    with pytest.raises(ValidationError) as info:
        load_objects(text, "two.yaml")
    assert [e.path for e in info.value.errors] == ["document[0].spec.weight", "document[1].spec.queue"]
    assert info.value.source == "two.yaml"


def test_single_document_errors_have_no_index() -> None:
    with pytest.raises(ValidationError) as info:
        load_objects(yaml.safe_dump(job_manifest(queue=[])), "one.yaml")
    assert [e.path for e in info.value.errors] == ["spec.queue"]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param(
            {"apiVersion": "batch/v1", "kind": "Job"},
            "apiVersion: a Job is read as batch.volcano.sh/v1alpha1, not batch/v1",
            id="kubernetes-batch-job",
        ),
        pytest.param(
            {"apiVersion": "apps/v1", "kind": "Deployment"},
            "kind: caldera does not read Deployment (apps/v1)",
            id="unknown-kind",
        ),
        pytest.param({"kind": "Job"}, "apiVersion: is required", id="no-apiVersion"),
        pytest.param({"apiVersion": "v1"}, "kind: is required", id="no-kind"),
        pytest.param("Job", "must be a mapping with apiVersion and kind, not a string", id="not-a-mapping"),
    ],
)
def test_parse_object_refuses_what_it_cannot_read(doc: Any, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        parse_object(doc, "x.yaml")
    assert message in str(info.value)
