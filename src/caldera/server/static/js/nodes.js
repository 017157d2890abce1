// Nodes: per node, what is allocated against what it has, and to which pods; each GPU drawn as a slot
// holding a pod (dashed when the GPUs are declared, not detected). From /api/v1/allocations, loaded
// again when nodes or pods change. A node of more than FOLD pods comes with only its GPU holders and
// its pods folded: their list is read (?node=) when opened, so many full nodes open fast. The first
// cards are drawn at once and the rest in the next tasks; a reload draws again only the cards of nodes
// that changed.

import { firstData, getJSON } from "./api.js";
import { GPU, RESOURCE_NAMES, amount, bar, colour, h, jobHref, main, phaseBadge, quantity, replace, showError } from "./dom.js";
import { follow } from "./live.js";

const FOLD = 12; // more pods than this on a node: their list is folded
const unfolded = new Set(); // nodes whose folded list the user opened: kept open across reloads

const FIRST = 12; // cards drawn before the page says it is ready; the rest follow in batches of this many
const summary = h("span", { class: "muted", id: "nodes-summary" });
const grid = h("div", { class: "nodes" });
const cards = new Map(); // node name → {text: its JSON, el: its card}
let filling = null; // the timer of the first draw's next batch

replace(main(), h("div", { class: "row" }, h("h1", {}, "Nodes"), h("span", { class: "spacer" }), summary), grid);

let loads = 0; // loads started: only the latest one's answer is drawn

// The page's first data may be its first nodes only (`partial`, with the whole counts): their cards are
// drawn, then the whole view is read at once.
async function load() {
  const first = firstData();
  if (first?.partial) setTimeout(() => load().catch(showError), 0);
  const n = ++loads;
  const view = first ?? (await getJSON(`/api/v1/allocations?podsUpTo=${FOLD}`));
  if (n !== loads) return view.resourceVersion;
  render(view.items);
  if (view.partial) summary.textContent = `${view.total} nodes, ${view.pods} pods placed`;
  return view.resourceVersion;
}

function render(nodes) {
  const pods = nodes.reduce((n, node) => n + node.podCount, 0);
  summary.textContent = `${nodes.length} nodes, ${pods} pods placed`;
  clearTimeout(filling);
  const first = cards.size <= FIRST; // nothing, or only the first cards, drawn yet: the rest in later tasks
  const names = new Set(nodes.map((n) => n.name));
  for (const [name, c] of cards) {
    if (names.has(name)) continue;
    c.el.remove();
    cards.delete(name);
  }
  const batch = (from, to) => {
    let before = from > 0 ? cards.get(nodes[from - 1].name)?.el ?? null : null;
    for (const node of nodes.slice(from, to)) {
      before = place(node, before);
    }
  };
  if (!first || nodes.length <= FIRST) return batch(0, nodes.length);
  batch(0, FIRST);
  const more = (from) => {
    batch(from, from + FIRST);
    if (from + FIRST < nodes.length) filling = setTimeout(() => more(from + FIRST), 0);
  };
  filling = setTimeout(() => more(FIRST), 0);
}

// The node's card, drawn again if the node changed, in its place after `before` (null: first).
function place(node, before) {
  const text = JSON.stringify(node);
  let c = cards.get(node.name);
  if (!c || c.text !== text) {
    const el = card(node);
    c?.el.replaceWith(el);
    c = { text, el };
    cards.set(node.name, c);
  }
  const at = before ? before.nextSibling : grid.firstChild;
  if (at !== c.el) grid.insertBefore(c.el, at);
  return c.el;
}

function card(node) {
  const resources = Object.keys(node.allocatable).filter((r) => r !== "pods" && r !== GPU);
  return h("section", { class: "panel node", dataset: { node: node.name } },
    h("h2", {}, node.name, node.ready ? null : h("span", { class: "phase phase-failed" }, "not ready"),
      h("span", { class: "spacer" }), h("span", { class: "muted" }, `${node.podCount} pods`)),
    node.gpus ? gpus(node) : null,
    resources.map((r) => {
      const cap = quantity(node.allocatable[r]), used = quantity(node.allocated[r]);
      return h("div", { class: "resource" },
        h("div", { class: "row" }, h("span", {}, RESOURCE_NAMES[r] ?? r), h("span", { class: "spacer" }),
          h("span", { class: "muted" }, `${amount(r, used)} / ${amount(r, cap)}`)),
        bar(cap, [{ value: used, title: `${amount(r, used)} of ${amount(r, cap)} allocated` }]));
    }),
    podList(node));
}

// A node's pods; with many, folded, read and drawn only when opened (kept open across reloads).
function podList(node) {
  if (!node.podCount) return h("p", { class: "muted" }, "no pods");
  if (node.podsListed === "all") return podTable(node.pods);
  const details = h("details", { class: "pods-fold" }, h("summary", {}, `${node.podCount} pods`));
  const fill = async () => {
    const view = await getJSON(`/api/v1/allocations?node=${encodeURIComponent(node.name)}`);
    if (details.open) details.replaceChildren(details.firstChild, podTable(view.items[0]?.pods ?? []));
  };
  details.addEventListener("toggle", () => {
    if (details.open) unfolded.add(node.name);
    else unfolded.delete(node.name);
    if (details.open) fill().catch(showError);
  });
  details.open = unfolded.has(node.name); // fires "toggle": read again
  return details;
}

function podTable(pods) {
  return h("div", { class: "pods-list" }, h("table", {},
    h("thead", {}, h("tr", {}, ["Pod", "Phase", "Requests", "GPUs"].map((c) => h("th", {}, c)))),
    h("tbody", {}, pods.map((p) => h("tr", { dataset: { pod: p.name } },
      h("td", {}, h("span", { class: "swatch", style: { background: colour(`${p.namespace}/${p.job}`) } }),
        p.job ? h("a", { href: jobHref(p.namespace, p.job) }, p.name) : p.name),
      h("td", {}, phaseBadge(p.phase)),
      h("td", { class: "mono" }, Object.entries(p.requests).filter(([r]) => r !== GPU).map(([r, q]) => `${r} ${q}`).join(", ")),
      h("td", { class: "mono" }, p.gpus.length ? p.gpus.join(",") : p.requests[GPU] ?? "-"))))));
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
