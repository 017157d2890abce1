// Jobs: the `caldera list` table, filtered by namespace, queue, phase and name, live. The rows come
// from /api/v1/jobtable (every job, with the fields a row shows), then from the watch of Jobs from
// its version (each change: no list is polled); a row is derived from a Job as `caldera list -w`
// derives it, from the table's partial Jobs and the watch's full ones alike. Filters live in the URL.
// Only the rows in view are in the DOM (`rows.js`): a thousand jobs open as fast as fifty.

import { firstData, getJSON, watch } from "./api.js";
import { age, h, jobDuration, jobHref, main, phaseBadge, ready, replace, showError } from "./dom.js";
import { setLive } from "./live.js";
import { windowedRows } from "./rows.js";

const jobs = new Map(); // "ns/name" → Job object
const params = new URLSearchParams(location.search);
const filters = { namespace: params.get("namespace") ?? "", queue: params.get("queue") ?? "", phase: params.get("phase") ?? "", name: params.get("name") ?? "" };
let sorted = null; // every key in order; null when a job came or went
let shown = []; // the keys the filters keep, in order
let shownSet = new Set();
let changed = new Set();
let cameOrWent = false; // since the last frame
let frame = null;

const COLUMNS = [["Namespace", "c-ns"], ["Name", "c-name"], ["Queue", "c-queue"], ["Phase", "c-phase"], ["Running", "c-num"],
  ["Retries", "c-num"], ["Min", "c-num"], ["Age", "c-num"], ["Duration", "c-num"]];
const tbody = h("tbody");
const table = windowedRows({ tbody, columns: COLUMNS.length, render: (key) => renderRow(key, jobs.get(key)) });
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
  refilter();
}

function matches(job) {
  if (!filters.namespace && !filters.queue && !filters.phase && !filters.name) return true;
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

function renderRow(key, job) {
  const r = row(job);
  return h("tr", { dataset: { job: key } },
    h("td", {}, r.namespace),
    h("td", {}, h("a", { href: jobHref(r.namespace, r.name) }, r.name)),
    h("td", {}, r.queue),
    h("td", {}, phaseBadge(r.phase)),
    h("td", { class: "num" }, r.running),
    h("td", { class: "num" }, r.retries),
    h("td", { class: "num" }, r.min),
    h("td", { class: "num age" }, age(r.created)),
    h("td", { class: "num duration" }, jobDuration(r.start, r.end)));
}

const byKey = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

// The rows the filters keep, in order, to the table (which draws those in view).
function refilter() {
  sorted ??= [...jobs.keys()].sort(byKey);
  shown = sorted.filter((k) => matches(jobs.get(k)));
  shownSet = new Set(shown);
  table.set(shown);
  updateCount();
}

// Changes since the last frame: a row drawn again, or the rows kept again when a job came, went, or
// came into or out of the filters.
function applyChanges() {
  frame = null;
  const keys = changed;
  changed = new Set();
  let again = cameOrWent;
  if (cameOrWent) sorted = null;
  cameOrWent = false;
  for (const k of keys) {
    const job = jobs.get(k);
    if (!job) continue;
    table.changed(k); // drawn again, if it is drawn
    if (matches(job) !== shownSet.has(k)) again = true; // into or out of the filters
  }
  if (again) refilter();
  updateOptions();
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
  count.textContent = shown.length === jobs.size ? `${jobs.size} jobs` : `${shown.length} of ${jobs.size} jobs`;
}

const keyOf = (job) => `${job.metadata?.namespace ?? "default"}/${job.metadata?.name}`;

function onEvents(events) {
  for (const ev of events) {
    const key = keyOf(ev.object ?? {});
    if (ev.type === "DELETED" || !jobs.has(key)) cameOrWent = true;
    if (ev.type === "DELETED") jobs.delete(key);
    else jobs.set(key, ev.object);
    changed.add(key);
  }
  if (frame === null) frame = requestAnimationFrame(applyChanges);
}

// Every job as the table view has it now; its version is where the watch goes on from.
async function list() {
  return show(await getJSON("/api/v1/jobtable"));
}

// The page's first data may be the first rows only (`partial`, with the whole count): those are drawn,
// then the whole table is read.
function show(view) {
  jobs.clear();
  for (const job of view.items) jobs.set(keyOf(job), job);
  sorted = null;
  refilter();
  updateOptions();
  if (view.partial) count.textContent = `${view.total} jobs`;
  return view.resourceVersion;
}

// Ages and durations move with the clock alone (only the rows drawn have cells to move).
setInterval(() => {
  for (const [k, tr] of table.drawn()) {
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
    h("table", { id: "jobs", class: "windowed" },
      h("thead", {}, h("tr", {}, COLUMNS.map(([c, cls], i) => h("th", { class: `${cls}${i >= 4 ? " num" : ""}` }, c)))),
      tbody)),
);

(async () => {
  const first = firstData();
  if (first) show(first);
  if (first?.partial) ready(); // the first rows are on screen; the whole table follows
  const version = first && !first.partial ? first.resourceVersion : await list().catch((e) => showError(e));
  ready(); // without a version, the watch lists every job itself
  watch({ kinds: ["Job"], resourceVersion: version, onEvents, onExpired: list, onState: setLive });
})();
