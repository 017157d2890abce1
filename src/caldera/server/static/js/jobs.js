// Jobs: the `caldera list` table, filtered by namespace, queue, phase and name, live. The rows come
// from /api/v1/jobtable (every job, with the fields a row shows), then from the watch of Jobs from
// its version (each change: no list is polled); a row is derived from a Job as `caldera list -w`
// derives it, from the table's partial Jobs and the watch's full ones alike. Filters live in the URL.

import { getJSON, watch } from "./api.js";
import { age, h, jobDuration, jobHref, main, phaseBadge, ready, replace, showError } from "./dom.js";
import { setLive } from "./live.js";

const jobs = new Map(); // "ns/name" → Job object
const rows = new Map(); // "ns/name" → <tr>
const params = new URLSearchParams(location.search);
const filters = { namespace: params.get("namespace") ?? "", queue: params.get("queue") ?? "", phase: params.get("phase") ?? "", name: params.get("name") ?? "" };
let changed = new Set();
let frame = null;

const tbody = h("tbody");
const count = h("span", { class: "muted", id: "count" });
const selects = { namespace: select("namespace", "all namespaces"), queue: select("queue", "all queues"), phase: select("phase", "all phases") };
const nameInput = h("input", { type: "search", id: "filter-name", placeholder: "name contains…", value: filters.name,
  oninput: (e) => setFilter("name", e.target.value) });

function select(key, all) {
  return h("select", { id: `filter-${key}`, onchange: (e) => setFilter(key, e.target.value) }, h("option", { value: "" }, all));
}

function setFilter(key, value) {
  filters[key] = value;
  const url = new URL(location.href);
  for (const [k, v] of Object.entries(filters)) v ? url.searchParams.set(k, v) : url.searchParams.delete(k);
  history.replaceState(null, "", url);
  for (const [k, tr] of rows) tr.hidden = !matches(jobs.get(k));
  updateCount();
}

function matches(job) {
  const r = row(job);
  return (!filters.namespace || r.namespace === filters.namespace) && (!filters.queue || r.queue === filters.queue)
    && (!filters.phase || r.phase === filters.phase) && (!filters.name || r.name.toLowerCase().includes(filters.name.toLowerCase()));
}

// One row, as `caldera list -w` reads a Job: running pods of all replicas, retries, minAvailable, times.
function row(job) {
  const meta = job.metadata ?? {}, spec = job.spec ?? {}, status = job.status ?? {};
  const pods = (spec.tasks ?? []).reduce((n, t) => n + Number(t.replicas ?? 0), 0);
  return {
    namespace: meta.namespace ?? "default",
    name: meta.name,
    queue: spec.queue ?? "default",
    phase: status.state?.phase ?? "Pending",
    running: `${Number(status.running ?? 0)}/${pods}`,
    retries: Number(status.retryCount ?? 0),
    min: spec.minAvailable ?? "-",
    created: meta.creationTimestamp,
    start: status.startTime,
    end: status.completionTime,
  };
}

function renderRow(job) {
  const r = row(job);
  const tr = h("tr", { dataset: { job: `${r.namespace}/${r.name}` } },
    h("td", {}, r.namespace),
    h("td", {}, h("a", { href: jobHref(r.namespace, r.name) }, r.name)),
    h("td", {}, r.queue),
    h("td", {}, phaseBadge(r.phase)),
    h("td", { class: "num" }, r.running),
    h("td", { class: "num" }, r.retries),
    h("td", { class: "num" }, r.min),
    h("td", { class: "num age" }, age(r.created)),
    h("td", { class: "num duration" }, jobDuration(r.start, r.end)));
  tr.hidden = !matches(job);
  return tr;
}

const byKey = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

function renderAll() {
  rows.clear();
  const keys = [...jobs.keys()].sort(byKey);
  const trs = keys.map((k) => {
    const tr = renderRow(jobs.get(k));
    rows.set(k, tr);
    return tr;
  });
  replace(tbody, trs);
  updateOptions();
  updateCount();
}

// Changes since the last frame: rows replaced, inserted in order, or removed.
function applyChanges() {
  frame = null;
  const keys = changed;
  changed = new Set();
  let sorted = null;
  for (const k of keys) {
    const old = rows.get(k);
    const job = jobs.get(k);
    if (!job) {
      old?.remove();
      rows.delete(k);
      continue;
    }
    const tr = renderRow(job);
    rows.set(k, tr);
    if (old) {
      old.replaceWith(tr);
      continue;
    }
    sorted ??= [...rows.keys()].sort(byKey);
    const next = sorted[sorted.indexOf(k) + 1];
    tbody.insertBefore(tr, next ? rows.get(next) : null);
  }
  updateOptions();
  updateCount();
}

function updateOptions() {
  const seen = { namespace: new Set(), queue: new Set(), phase: new Set() };
  for (const job of jobs.values()) {
    const r = row(job);
    seen.namespace.add(r.namespace);
    seen.queue.add(r.queue);
    seen.phase.add(r.phase);
  }
  for (const [key, el] of Object.entries(selects)) {
    const values = [...seen[key]];
    if (filters[key]) values.push(filters[key]);
    const wanted = [...new Set(values)].sort();
    const have = [...el.options].slice(1).map((o) => o.value);
    if (wanted.join("\0") === have.join("\0")) continue;
    replace(el, el.options[0], wanted.map((v) => h("option", { value: v }, v)));
    el.value = filters[key];
  }
}

function updateCount() {
  let shown = 0;
  for (const tr of rows.values()) if (!tr.hidden) shown++;
  count.textContent = shown === rows.size ? `${rows.size} jobs` : `${shown} of ${rows.size} jobs`;
}

const keyOf = (job) => `${job.metadata?.namespace ?? "default"}/${job.metadata?.name}`;

function onEvents(events) {
  for (const ev of events) {
    const key = keyOf(ev.object ?? {});
    if (ev.type === "DELETED") jobs.delete(key);
    else jobs.set(key, ev.object);
    changed.add(key);
  }
  if (frame === null) frame = requestAnimationFrame(applyChanges);
}

// Every job as the table view has it now; its version is where the watch goes on from.
async function list() {
  const table = await getJSON("/api/v1/jobtable");
  jobs.clear();
  for (const job of table.items) jobs.set(keyOf(job), job);
  renderAll();
  return table.resourceVersion;
}

// Ages and durations move with the clock alone.
setInterval(() => {
  for (const [k, tr] of rows) {
    if (tr.hidden) continue;
    const r = row(jobs.get(k));
    tr.querySelector(".age").textContent = age(r.created);
    tr.querySelector(".duration").textContent = jobDuration(r.start, r.end);
  }
}, 1000);

replace(
  main(),
  h("div", { class: "row" }, h("h1", {}, "Jobs"), h("span", { class: "spacer" }), count),
  h("div", { class: "filters" },
    h("label", {}, "Namespace", selects.namespace), h("label", {}, "Queue", selects.queue),
    h("label", {}, "Phase", selects.phase), h("label", {}, "Name", nameInput)),
  h("section", { class: "panel" },
    h("table", { id: "jobs" },
      h("thead", {}, h("tr", {}, ["Namespace", "Name", "Queue", "Phase", "Running", "Retries", "Min", "Age", "Duration"]
        .map((c, i) => h("th", { class: i >= 4 ? "num" : undefined }, c)))),
      tbody)),
);

(async () => {
  const version = await list().catch((e) => showError(e)); // without it, the watch lists every job itself
  ready();
  watch({ kinds: ["Job"], resourceVersion: version, onEvents, onExpired: list, onState: setLive });
})();
