"""`caldera kube manifests`: what to `kubectl apply --server-side -f -` to run caldera on a Kubernetes cluster.

It prints (YAML documents, or one JSON `List` with `-o json`) the namespace, caldera's CRDs of Volcano's
API, the ServiceAccount and RBAC of the controller, a Deployment of 2 replicas of `caldera controller`
and, with `--with-etcd`, an etcd for elastic jobs. `--crds-only` prints the CRDs alone (for a cluster
whose controller runs elsewhere, or for tests). Nothing is sent anywhere: see docs/kubernetes.md.
"""

from __future__ import annotations

import json

import click
import yaml

from caldera.backends.kube.crds import crds
from caldera.backends.kube.install import DEFAULT_IMAGE, DEFAULT_NAMESPACE, install_manifests
from caldera.cli.common import VerbGroup
from caldera.core.validation import dns1123_label_error


@click.group(cls=VerbGroup)
def kube() -> None:
    """caldera on Kubernetes: the manifests that install it."""


@kube.command("manifests")
@click.option("--namespace", default=DEFAULT_NAMESPACE, show_default=True, help="where the controller runs")
@click.option("--image", default=DEFAULT_IMAGE, show_default=True, help="the controller's image (see Dockerfile)")
@click.option("--with-etcd", is_flag=True, help="also an etcd for elastic jobs (--elastic-server)")
@click.option("--crds-only", is_flag=True, help="only the CustomResourceDefinitions")
@click.option("-o", "--output", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True)
def manifests(namespace: str, image: str, with_etcd: bool, crds_only: bool, output: str) -> None:
    """Print the CRDs, RBAC, ServiceAccount and controller Deployment (pipe to kubectl apply --server-side -f -)."""
    if (why := dns1123_label_error(namespace)) is not None:
        raise click.BadParameter(why, param_hint="--namespace")
    if not image.strip():
        raise click.BadParameter("must not be empty", param_hint="--image")
    objects = crds() if crds_only else install_manifests(namespace, image, with_etcd=with_etcd)
    if output == "json":
        click.echo(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2))
        return
    click.echo(yaml.safe_dump_all(objects, sort_keys=False, explicit_start=True, width=120), nl=False)
