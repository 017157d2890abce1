// Overview: resources allocated against capacity, queues' shares side by side, jobs by phase,
// the last events. One view (/api/v1/overview), loaded again when jobs, queues or nodes change.

import { firstData, getJSON } from "./api.js";
import { GPU, RESOURCE_NAMES, amount, bar, clockTime, h, jobHref, main, phaseBadge, quantity, replace } from "./dom.js";
import { follow } from "./live.js";

const SHOWN = [GPU, "cpu", "memory"];

async function load() {
  const view = firstData() ?? (await getJSON("/api/v1/overview"));
  render(view);
  return view.resourceVersion;
}

function render(view) {
  replace(
    main(),
    h("h1", {}, "Overview"),
    h("div", { class: "grid" }, resourcePanels(view)),
    h("section", { class: "panel wide" }, h("h2", {}, "Queues"), queuesTable(view.queues, capacities(view)), legend()),
    h(
      "div",
      { class: "grid" },
      h("section", { class: "panel", id: "jobs-by-phase" }, h("h2", {}, "Jobs by phase"), counts(view.jobs, "/jobs?phase=")),
      h("section", { class: "panel" }, h("h2", {}, "Pods by phase"), counts(view.pods)),
    ),
    h("section", { class: "panel" }, h("h2", {}, "Recent changes"), events(view.events)),
  );
}

function resourcePanels(view) {
  const nodes = h("section", { class: "panel resource" }, h("h2", {}, "Nodes"),
    h("div", { class: "big" }, `${view.nodes.ready} / ${view.nodes.total}`), h("div", { class: "muted" }, "ready"));
  const panels = view.resources
    .filter((r) => SHOWN.includes(r.name) || quantity(r.capacity) > 0)
    .map((r) => {
      const cap = quantity(r.capacity), used = quantity(r.allocated);
      const title = `${amount(r.name, used)} of ${amount(r.name, cap)} allocated`;
      return h("section", { class: "panel resource", dataset: { resource: r.name } },
        h("h2", {}, RESOURCE_NAMES[r.name] ?? r.name),
        h("div", { class: "big" }, `${amount(r.name, used)} / ${amount(r.name, cap)}`),
        bar(cap, [{ value: used, title }]),
        h("div", { class: "muted" }, cap > 0 ? `${Math.round((100 * used) / cap)}% allocated` : "none on any node"));
    });
  return [nodes, ...panels];
}

// Each resource's capacity: the scale of the queues' bars, so that shares compare across queues.
function capacities(view) {
  return Object.fromEntries(view.resources.map((r) => [r.name, quantity(r.capacity)]));
}

function queuesTable(queues, capacity) {
  const resources = SHOWN.filter((r) => queues.some((q) => [q.deserved, q.allocated, q.requested].some((x) => r in x)));
  return h("table", { id: "queues" },
    h("thead", {}, h("tr", {}, h("th", {}, "Queue"), h("th", {}, "State"), h("th", { class: "num" }, "Weight"),
      h("th", {}, "Jobs"), resources.map((r) => h("th", {}, RESOURCE_NAMES[r] ?? r)))),
    h("tbody", {}, queues.map((q) => h("tr", { dataset: { queue: q.name } },
      h("td", {}, q.name),
      h("td", {}, phaseBadge(q.state)),
      h("td", { class: "num" }, q.weight),
      h("td", {}, Object.entries(q.jobs).map(([p, n]) => `${n} ${p}`).join(", ") || "none"),
      resources.map((r) => queueCell(q, r, capacity[r] ?? 0))))));
}

function queueCell(q, r, capacity) {
  const alloc = quantity(q.allocated[r]), deserved = quantity(q.deserved[r]), req = quantity(q.requested[r]);
  const cap = q.capability[r] ? quantity(q.capability[r]) : null;
  const whole = Math.max(capacity, alloc, deserved, req) || 1;
  const text = `${amount(r, alloc)} · ${amount(r, deserved)} · ${amount(r, req)}`;
  return h("td", { class: "queue-cell" },
    bar(whole, [
      { value: alloc, title: `allocated ${amount(r, alloc)}` },
      { value: Math.max(0, req - alloc), class: "req", title: `requested ${amount(r, req)}` },
    ], [{ value: deserved, title: `deserved ${amount(r, deserved)}` }]),
    h("span", { class: "muted mono" }, text + (cap !== null ? ` (cap ${amount(r, cap)})` : "")));
}

function legend() {
  return h("div", { class: "legend" },
    h("span", {}, "bars: of the cluster's capacity; numbers: allocated · deserved · requested"),
    h("span", {}, h("i", { class: "alloc" }), "allocated"),
    h("span", {}, h("i", { class: "req" }), "requested, not allocated"),
    h("span", {}, h("i", { class: "deserved" }), "deserved"));
}

function counts(byPhase, href) {
  const entries = Object.entries(byPhase);
  if (!entries.length) return h("p", { class: "muted" }, "none");
  return h("div", { class: "counts" }, entries.map(([phase, n]) => {
    const badge = h("span", { class: `phase phase-${phase.toLowerCase()}` }, `${phase} ${n}`);
    return href ? h("a", { href: href + encodeURIComponent(phase) }, badge) : badge;
  }));
}

export function events(list) {
  if (!list.length) return h("p", { class: "muted" }, "nothing yet");
  return h("ul", { class: "events" }, [...list].reverse().map((e) => h("li", {},
    h("span", { class: "muted mono" }, clockTime(e.time)),
    h("span", {}, e.kind, e.reason ? ` · ${e.reason}` : ""),
    h("span", { class: "what" }, e.kind === "JobPhase" ? h("a", { href: jobHref(e.namespace, e.object) }, e.object) : e.object,
      e.node ? ` on ${e.node}` : "", e.message ? ` — ${e.message}` : ""))));
}

follow({ load, kinds: ["Job", "Queue", "Node", "PodGroup"], every: 1000 });
