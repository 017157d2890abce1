"""`caldera node list|label|taint`: the nodes' labels and taints, as `kubectl get nodes --show-labels|label|taint`.

`label NODE K=V... K-...` sets and removes labels; an existing label keeps its value
unless `--overwrite` (kubectl's rule). `taint NODE K[=V]:EFFECT... K[:EFFECT]-...` adds
and removes taints (a taint of the same key and effect is replaced). Jobs then choose
nodes with `--selector` / `nodeSelector` and tolerate taints with `--toleration` /
`tolerations`. On the embedded cluster the changes are kept across restarts; the labels
the cluster sets itself (`kubernetes.io/hostname`, `caldera.dev/...`) cannot be changed.
"""

from __future__ import annotations

import click

from caldera.cli.common import VerbGroup, cluster, complete_nodes, no_headers_option, output_option, table, text
from caldera.cli.output import as_list, emit, emit_names, print_table
from caldera.core.nodelabels import parse_label, parse_taint, parse_taint_removal
from caldera.system.api import JSON, NotFound


@click.group(cls=VerbGroup)
def node() -> None:
    """List nodes with their labels and taints; label and taint them."""


@node.command("list")
@output_option
@no_headers_option
@click.pass_context
def list_nodes(ctx: click.Context, output: str, no_headers: bool) -> None:
    """The nodes, their labels and taints."""
    nodes = cluster(ctx).list_nodes()
    if output in ("json", "yaml"):
        emit(as_list(nodes), output)
        return
    if output == "name":
        emit_names(f"node/{n['name']}" for n in nodes)
        return
    t = table("NAME", "GPUS", "PODS", "LABELS", "TAINTS")
    for n in nodes:
        t.add_row(str(n["name"]), text(n.get("gpus")), text(n.get("pods")), text(labels_text(n)), text(taints_text(n)))
    print_table(t, no_headers)


@node.command("label")
@click.argument("name", shell_complete=complete_nodes)
@click.argument("labels", nargs=-1, required=True, metavar="K=V|K-...")
@click.option("--overwrite", is_flag=True, help="change a label that has a value already")
@click.pass_context
def label(ctx: click.Context, name: str, labels: tuple[str, ...], overwrite: bool) -> None:
    """Set (K=V) or remove (K-) labels of node NAME."""
    try:
        changes = dict(parse_label(item) for item in labels)
    except ValueError as e:
        raise click.BadParameter(str(e), ctx, ctx.command.params[1]) from None
    c = cluster(ctx)
    current = (_node(c.list_nodes(), name).get("labels") or {}) if not overwrite else {}
    taken = [k for k, v in changes.items() if v is not None and k in current and current[k] != v]
    if taken:
        raise click.UsageError(f"node {name} has {taken[0]}={current[taken[0]]} already: add --overwrite to change it")
    c.patch_node(name, labels=changes)
    click.echo(f"node/{name} labeled")


@node.command("taint")
@click.argument("name", shell_complete=complete_nodes)
@click.argument("taints", nargs=-1, required=True, metavar="K[=V]:EFFECT|K[:EFFECT]-...")
@click.pass_context
def taint(ctx: click.Context, name: str, taints: tuple[str, ...]) -> None:
    """Add (K[=V]:EFFECT) or remove (K- or K:EFFECT-) taints of node NAME."""
    c = cluster(ctx)
    have = list(_node(c.list_nodes(), name).get("taints") or [])
    try:
        for item in taints:
            if item.endswith("-"):
                key, effect = parse_taint_removal(item)
                kept = [t for t in have if not (t.get("key") == key and effect in ("", t.get("effect")))]
                if len(kept) == len(have):
                    raise click.UsageError(f"node {name} has no taint {item.removesuffix('-')}")
                have = kept
            else:
                new = parse_taint(item)
                have = [t for t in have if (t.get("key"), t.get("effect")) != (new.key, new.effect)] + [new.to_dict()]
    except ValueError as e:
        raise click.BadParameter(str(e), ctx, ctx.command.params[1]) from None
    c.patch_node(name, taints=have)
    click.echo(f"node/{name} tainted" if not all(t.endswith("-") for t in taints) else f"node/{name} untainted")


def _node(nodes: list[JSON], name: str) -> JSON:
    found = next((n for n in nodes if n.get("name") == name), None)
    if found is None:
        raise NotFound(f"node {name} not found (nodes: {', '.join(str(n.get('name')) for n in nodes)})")
    return found


def labels_text(n: JSON) -> str:
    """A node's labels as kubectl's --show-labels writes them: `k=v,k2=v2`."""
    return ",".join(f"{k}={v}" for k, v in sorted((n.get("labels") or {}).items()))


def taints_text(n: JSON) -> str:
    """A node's taints as kubectl taint takes them: `k=v:NoSchedule,k2:NoExecute`."""
    return ",".join(
        f"{t.get('key')}{'=' + str(t['value']) if t.get('value') else ''}:{t.get('effect')}"
        for t in n.get("taints") or []
    )
