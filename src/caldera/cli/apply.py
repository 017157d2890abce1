"""`caldera apply -f FILE`: create or update the Jobs, Queues and PriorityClasses of a manifest file.

The whole file is read and checked first (every document, every error at once), so a
file with a broken document changes nothing. Queues and PriorityClasses are applied
before Jobs, so a file may bring the queue its jobs need. Relative paths in a job (its
containers' `workingDir`, and so the paths in their commands) resolve against the
directory of the file that holds it, as docker compose reads a compose file, so a
manifest runs the same from wherever it is applied; a job read from stdin (`-f -`)
resolves them against the directory `apply` runs in. That directory is sent as submitDir.
A Kubeflow training job (`kubeflow.org/v1` TFJob, PyTorchJob, MPIJob, PaddleJob) is sent
as the Volcano Job it runs as (`caldera.core.kubeflow`) and reported under its own kind
(`tfjob.kubeflow.org/mnist created`).
"""

from __future__ import annotations

import os

import click

from caldera.cli.common import JOB_RESOURCE, QUEUE_RESOURCE, Cluster, Verb, cluster
from caldera.core.errors import FieldError, ValidationError
from caldera.core.jobkind import resource_name
from caldera.core.kubeflow import as_volcano, is_kubeflow
from caldera.core.kubeflow import warnings as kubeflow_warnings
from caldera.core.manifest import load_documents, load_objects
from caldera.system.api import JSON, NotFound

RESOURCES = {"Job": JOB_RESOURCE, "Queue": QUEUE_RESOURCE, "PriorityClass": "priorityclass.scheduling.k8s.io"}


@click.command(cls=Verb)
@click.option(
    "-f",
    "--filename",
    "files",
    multiple=True,
    required=True,
    type=click.Path(exists=True, dir_okay=False, allow_dash=True),
    help="a YAML manifest (several documents allowed; - reads stdin)",
)
@click.option("-n", "--namespace", help="namespace of jobs that name none  [default: default]")
@click.pass_context
def apply(ctx: click.Context, files: tuple[str, ...], namespace: str | None) -> None:
    """Create or update the Jobs and Queues described in FILE."""
    docs: list[tuple[JSON, str]] = []  # (document, the directory its relative paths start from)
    for path in files:
        with click.open_file(path) as f:
            text = f.read()
        source = "<stdin>" if path == "-" else path
        load_objects(text, source)  # every rule, every document, before anything is sent
        found = load_documents(text, source)
        if not found:
            raise ValidationError([FieldError("", "no object to apply")], source)
        base = os.getcwd() if path == "-" else os.path.dirname(os.path.abspath(path))
        docs += [(_in_namespace(d, namespace, source), base) for d in found]
    docs.sort(key=lambda d: d[0].get("kind") == "Job" or is_kubeflow(d[0]))  # stable: queues first, in file order
    c = cluster(ctx)
    for doc, submit_dir in docs:
        for warning in kubeflow_warnings(doc):
            click.echo(f"caldera: warning: {_resource(doc)}: {warning}", err=True)
        job = as_volcano(doc)
        existed = _exists(c, job)
        c.apply(job, submit_dir=submit_dir)
        verb = "applied" if existed is None else "configured" if existed else "created"
        click.echo(f"{_resource(doc)} {verb}")


def _resource(doc: JSON) -> str:
    name = doc["metadata"]["name"]
    if is_kubeflow(doc):
        return resource_name(str(doc["apiVersion"]), str(doc["kind"]), name)
    return f"{RESOURCES.get(str(doc.get('kind')), doc.get('kind'))}/{name}"


def _in_namespace(doc: JSON, namespace: str | None, source: str) -> JSON:
    if doc.get("kind") != "Job" and not is_kubeflow(doc):
        return doc
    meta = doc.get("metadata") or {}
    given = meta.get("namespace")
    if given and namespace and given != namespace:
        rule = f"namespace {given!r} differs from the one asked for (-n {namespace})"
        raise ValidationError([FieldError("metadata.namespace", rule)], source)
    return {**doc, "metadata": {**meta, "namespace": given or namespace or "default"}}


def _exists(c: Cluster, doc: JSON) -> bool | None:
    """Whether the object exists already (None: cannot tell, for kinds the API cannot read back)."""
    meta = doc["metadata"]
    try:
        if doc.get("kind") == "Job":
            c.get_job(meta["namespace"], meta["name"])
        elif doc.get("kind") == "Queue":
            c.get_queue(meta["name"])
        else:
            return None
    except NotFound:
        return False
    return True
