// Timeline: pods on nodes over time, so gang starts, preemptions and restarts can be seen. From
// /api/v1/timeline (the stored event history; as columns, a few times smaller than one object per
// run, the first in the page itself), loaded again when pods change; the present moves on.

import { firstData, getJSON } from "./api.js";
import { h, jobHref, main, replace, showError } from "./dom.js";
import { gantt } from "./gantt.js";
import { follow } from "./live.js";

// Seconds back from now; "fit" shows the runs of the last day, from the first of them.
const FIT = -1;
const WINDOWS = [["fit", FIT], ["15 min", 900], ["1 hour", 3600], ["6 hours", 21600], ["24 hours", 86400], ["all", 0]];
const params = new URLSearchParams(location.search);
let windowSeconds = Number(params.get("window") ?? FIT);
let jobFilter = params.get("job") ?? "";
let segments = [];
let truncated = false;

const chart = gantt({ onPick: (s) => s.job && location.assign(jobHref(s.namespace, s.job)) });
const summary = h("span", { class: "muted", id: "timeline-summary" });
const windowSelect = h("select", { id: "timeline-window", onchange: (e) => { windowSeconds = Number(e.target.value); remember(); live.reload(); } },
  WINDOWS.map(([label, s]) => h("option", { value: s, selected: s === windowSeconds }, label)));
const jobInput = h("input", { type: "search", id: "timeline-job", placeholder: "job name contains…", value: jobFilter,
  oninput: (e) => { jobFilter = e.target.value; remember(); show(); } });

function remember() {
  const url = new URL(location.href);
  url.searchParams.set("window", String(windowSeconds));
  jobFilter ? url.searchParams.set("job", jobFilter) : url.searchParams.delete("job");
  history.replaceState(null, "", url);
}

replace(main(),
  h("div", { class: "row" }, h("h1", {}, "Timeline"), h("span", { class: "spacer" }), summary),
  h("div", { class: "filters" }, h("label", {}, "Window", windowSelect), h("label", {}, "Job", jobInput),
    h("span", { class: "legend" }, h("span", {}, "colour: job"), h("span", {}, "white edge: restarted in place"),
      h("span", {}, "red end: failed"), h("span", {}, "amber end: preempted, reclaimed or evicted"), h("span", {}, "red line: now"))),
  chart.el);

let loads = 0; // loads started: only the latest one's answer is shown
let partial = null; // while only the first nodes' runs are here: the whole counts {total, nodes}

// The page's first data may be the runs of its first nodes only (`partial`, with the whole counts):
// those are drawn, then the whole timeline is read at once.
async function load() {
  const first = firstData();
  if (first?.partial) setTimeout(() => load().catch(showError), 0);
  const n = ++loads;
  const back = windowSeconds === FIT ? 86400 : windowSeconds;
  const since = back ? Date.now() / 1000 - back : null;
  const view = first ?? (await getJSON(`/api/v1/timeline?format=columns${since ? `&since=${since}` : ""}`));
  if (n !== loads) return view.resourceVersion;
  segments = runs(view);
  truncated = view.truncated;
  partial = view.partial ? { total: view.total, nodes: view.nodes } : null;
  show();
  return view.resourceVersion;
}

// The runs of the columns form (see the server's views.timeline_columns) as one object each.
function runs({ count, strings, t0, columns: c }) {
  const out = new Array(count);
  for (let i = 0; i < count; i++) {
    out[i] = {
      namespace: strings[c.namespace[i]], pod: strings[c.pod[i]], job: strings[c.job[i]], task: strings[c.task[i]],
      node: strings[c.node[i]], start: t0 + c.start[i] / 1000, end: c.end[i] === null ? null : t0 + c.end[i] / 1000,
      outcome: strings[c.outcome[i]], exitCode: c.exitCode[i], reason: strings[c.reason[i]], restart: c.restart[i] === 1,
    };
  }
  return out;
}

let shown = [];

function show() {
  shown = jobFilter ? segments.filter((s) => s.job.includes(jobFilter) || s.pod.includes(jobFilter)) : segments;
  slide();
  chart.set(shown);
  const nodes = new Set(shown.map((s) => s.node)).size;
  const counts = partial && !jobFilter ? `${partial.total} runs on ${partial.nodes} nodes` : `${shown.length} runs on ${nodes} nodes`;
  summary.textContent = `${counts}${truncated ? " (the latest only: narrow the window)" : ""}`;
}

function slide() {
  const now = Date.now() / 1000;
  let start = now - windowSeconds;
  if (windowSeconds <= 0) {
    start = now - 60;
    for (const s of shown) start = Math.min(start, s.start);
  }
  chart.range(start, now + (now - start) * 0.02);
}

// The present moves: slide the window every second (drawing only, nothing fetched).
setInterval(() => document.visibilityState === "visible" && slide(), 1000);

const live = follow({ load, kinds: ["Pod"], every: 3000 });
