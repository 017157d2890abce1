// Nodes: per node, what is allocated against what it has, and to which pods; each GPU drawn as a slot
// holding a pod (dashed when the GPUs are declared, not detected). From /api/v1/allocations, loaded
// again when nodes or pods change.

import { getJSON } from "./api.js";
import { GPU, RESOURCE_NAMES, amount, bar, colour, h, jobHref, main, phaseBadge, quantity, replace } from "./dom.js";
import { follow } from "./live.js";

const FOLD = 12; // more pods than this on a node: their list is folded
const unfolded = new Set(); // nodes whose folded list the user opened: kept open across reloads

async function load() {
  const view = await getJSON("/api/v1/allocations");
  render(view.items);
  return view.resourceVersion;
}

function render(nodes) {
  const pods = nodes.reduce((n, node) => n + node.pods.length, 0);
  replace(main(),
    h("div", { class: "row" }, h("h1", {}, "Nodes"), h("span", { class: "spacer" }),
      h("span", { class: "muted" }, `${nodes.length} nodes, ${pods} pods placed`)),
    h("div", { class: "nodes" }, nodes.map(card)));
}

function card(node) {
  const resources = Object.keys(node.allocatable).filter((r) => r !== "pods" && r !== GPU);
  return h("section", { class: "panel node", dataset: { node: node.name } },
    h("h2", {}, node.name, node.ready ? null : h("span", { class: "phase phase-failed" }, "not ready"),
      h("span", { class: "spacer" }), h("span", { class: "muted" }, `${node.pods.length} pods`)),
    node.gpus ? gpus(node) : null,
    resources.map((r) => {
      const cap = quantity(node.allocatable[r]), used = quantity(node.allocated[r]);
      return h("div", { class: "resource" },
        h("div", { class: "row" }, h("span", {}, RESOURCE_NAMES[r] ?? r), h("span", { class: "spacer" }),
          h("span", { class: "muted" }, `${amount(r, used)} / ${amount(r, cap)}`)),
        bar(cap, [{ value: used, title: `${amount(r, used)} of ${amount(r, cap)} allocated` }]));
    }),
    podList(node.name, node.pods));
}

// A node's pods; with many, folded and drawn only when opened (a hundred nodes of a hundred pods stay light).
function podList(name, pods) {
  if (!pods.length) return h("p", { class: "muted" }, "no pods");
  const table = () => h("div", { class: "pods-list" }, h("table", {},
    h("thead", {}, h("tr", {}, ["Pod", "Phase", "Requests", "GPUs"].map((c) => h("th", {}, c)))),
    h("tbody", {}, pods.map((p) => h("tr", { dataset: { pod: p.name } },
      h("td", {}, h("span", { class: "swatch", style: { background: colour(`${p.namespace}/${p.job}`) } }),
        p.job ? h("a", { href: jobHref(p.namespace, p.job) }, p.name) : p.name),
      h("td", {}, phaseBadge(p.phase)),
      h("td", { class: "mono" }, Object.entries(p.requests).filter(([r]) => r !== GPU).map(([r, q]) => `${r} ${q}`).join(", ")),
      h("td", { class: "mono" }, p.gpus.length ? p.gpus.join(",") : p.requests[GPU] ?? "-"))))));
  if (pods.length <= FOLD) return table();
  const details = h("details", { class: "pods-fold", open: unfolded.has(name) }, h("summary", {}, `${pods.length} pods`));
  if (details.open) details.append(table());
  details.addEventListener("toggle", () => {
    if (details.open) unfolded.add(name);
    else unfolded.delete(name);
    if (details.open && details.children.length === 1) details.append(table());
  });
  return details;
}

function gpus(node) {
  const holder = new Map();
  for (const p of node.pods) for (const id of p.gpus) holder.set(id, p);
  const used = quantity(node.allocated[GPU]);
  const ids = node.gpuIds?.length ? node.gpuIds : [...holder.keys()].sort((a, b) => a - b);
  const slots = ids.map((id) => ({ id, pod: holder.get(id) ?? null }));
  for (let i = slots.length; i < node.gpus; i++) slots.push({ id: null, pod: null });
  return h("div", {},
    h("div", { class: "row" }, h("span", {}, "GPUs"), node.virtualGpus ? h("span", { class: "tag", title: "declared with --gpus-per-node on a machine without GPUs" }, "virtual") : null,
      h("span", { class: "spacer" }), h("span", { class: "muted" }, `${used} / ${node.gpus}`)),
    h("div", { class: "gpus" }, slots.map((s) => {
      const slot = h("div", { class: `gpu${s.pod ? " used" : ""}${node.virtualGpus ? " virtual" : ""}`,
        title: s.pod ? `GPU ${s.id}: ${s.pod.namespace}/${s.pod.name}` : "free" },
        h("span", { class: "id" }, s.id === null ? "GPU" : `GPU ${s.id}`),
        s.pod ? h("span", { class: "who" }, s.pod.name) : h("span", { class: "muted" }, "free"));
      if (s.pod) slot.style.background = colour(`${s.pod.namespace}/${s.pod.job}`);
      return slot;
    })));
}

follow({ load, kinds: ["Node", "Pod"], every: 1000 });
