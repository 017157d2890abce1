// One job: its facts, why it waits, its actions (with a confirmation), its tasks and pods, its events
// as a timeline, its logs. Loaded from /describe, then again whenever the watch shows a change to the
// job, its pods or its podgroup.

import { ApiError, currentVersion, firstData, getJSON, jobPath, request, watch } from "./api.js";
import { confirmAction } from "./dialog.js";
import { age, clockTime, duration, h, jobDuration, main, notice, phaseBadge, ready, replace, showError } from "./dom.js";
import { setLive } from "./live.js";
import { logViewer } from "./logs.js";

const [, , nsPart, namePart] = location.pathname.split("/");
const namespace = decodeURIComponent(nsPart);
const name = decodeURIComponent(namePart);
const FINISHED = ["Completed", "Failed", "Terminated", "Aborted"];
const ELASTIC_MAX = "caldera.dev/elastic-max-";

const logs = logViewer(namespace);
const head = h("div");
const why = h("div");
const podsPanel = h("section", { class: "panel", id: "pods" });
const eventsPanel = h("section", { class: "panel", id: "events" });
let current = null;
let gone = false;

replace(main(), head, why, podsPanel, logs.el, eventsPanel);

let deleted = false; // the watch said the job was deleted: nothing to ask for until it comes back

async function load() {
  if (deleted) {
    gone = true;
    return render();
  }
  try {
    current = firstData() ?? (await getJSON(`${jobPath(namespace, name)}/describe`));
    gone = false;
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 404)) throw e;
    gone = true;
  }
  render();
}

function render() {
  if (gone) {
    replace(head, h("h1", {}, name), h("div", { class: "banner", id: "gone" }, `Job ${namespace}/${name} does not exist (any more).`));
    replace(why);
    podsPanel.hidden = eventsPanel.hidden = logs.el.hidden = true;
    return;
  }
  const { job, summary, podgroup, events } = current;
  podsPanel.hidden = eventsPanel.hidden = false;
  logs.el.hidden = !(summary.pods ?? []).length; // no pod, no log yet
  renderHead(job, summary);
  renderWhy(summary, podgroup);
  renderPods(summary);
  renderEvents(events, summary.creationTimestamp);
  logs.pods(summary.pods ?? []);
}

function renderHead(job, s) {
  const reason = [s.reason, s.message].filter(Boolean).join(": ");
  const facts = [
    ["Namespace", s.namespace], ["Queue", s.queue],
    ["Phase", h("span", {}, phaseBadge(s.phase), reason ? h("span", { class: "muted" }, ` (${reason})`) : "")],
    ["Retries", s.retryCount], ["Min available", s.minAvailable],
    ["Age", h("span", { id: "age" }, age(s.creationTimestamp))],
    ["Duration", h("span", { id: "duration" }, jobDuration(s.startTime, s.completionTime))],
  ];
  if (s.tensorboard) facts.push(["TensorBoard", h("a", { href: s.tensorboard, target: "_blank", rel: "noopener", id: "tensorboard" }, s.tensorboard)]);
  replace(head,
    h("div", { class: "row" }, h("h1", { id: "job-name" }, s.name), h("span", { class: "spacer" }), actions(job, s)),
    h("section", { class: "panel" }, h("dl", { class: "facts" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v ?? "-")]))));
}

// Why it waits: the job's "waiting" (what `caldera get` and `describe` say); from a daemon that does not
// say it, the PodGroup's Unschedulable condition.
function renderWhy(s, podgroup) {
  let reason = s.waiting?.reason;
  let message = s.waiting?.message;
  let since = null;
  if (s.waiting === undefined) {
    const conditions = podgroup?.status?.conditions ?? [];
    const last = conditions[conditions.length - 1];
    const pods = s.pods ?? [];
    const placed = pods.length > 0 && pods.every((p) => p.node);
    const held = !FINISHED.includes(s.phase) && (!placed || ["Pending", "Inqueue"].includes(podgroup?.status?.phase));
    if (held && last?.type === "Unschedulable" && last.status === "True") {
      [reason, message, since] = [last.reason || "Unschedulable", last.message, last.lastTransitionTime];
    }
  }
  if (!reason) return replace(why);
  const when = s.waiting?.never ? "never, as the nodes and the queue are" : since ? `not now, since ${age(since)} ago` : "not now";
  replace(why, h("div", { class: "why", id: "why" },
    h("strong", {}, "Why it waits: "), h("span", { class: "reason" }, reason), message ? `: ${message}` : "",
    h("span", { class: "muted" }, ` (${when}; caldera explain ${s.name} says more)`)));
}

function actions(job, s) {
  const finished = FINISHED.includes(s.phase);
  const suspended = ["Aborted", "Aborting"].includes(s.phase);
  const buttons = [];
  if (suspended) buttons.push(h("button", { id: "resume", onclick: () => command("ResumeJob") }, "Resume"));
  else buttons.push(h("button", { id: "suspend", disabled: finished, onclick: () => command("AbortJob") }, "Suspend"));
  for (const t of elasticTasks(job)) {
    buttons.push(h("button", { id: `scale-${t.name}`, disabled: finished, onclick: () => scale(t) }, `Scale ${t.name}…`));
  }
  buttons.push(h("button", { id: "delete", class: "danger", onclick: remove }, "Delete"));
  return h("div", { class: "actions" }, buttons);
}

function elasticTasks(job) {
  const annotations = job.metadata?.annotations ?? {};
  return (job.spec?.tasks ?? []).filter((t) => annotations[ELASTIC_MAX + t.name] !== undefined).map((t) => ({
    name: t.name, replicas: t.replicas, min: t.minAvailable ?? t.replicas, max: Number(annotations[ELASTIC_MAX + t.name]),
  }));
}

async function command(action) {
  const suspend = action === "AbortJob";
  const ok = await confirmAction({
    title: suspend ? `Suspend ${name}?` : `Resume ${name}?`,
    text: suspend ? "Its pods are stopped; it keeps its place and can be resumed." : "Its pods are created again and it is scheduled as a new run.",
    confirm: suspend ? "Suspend" : "Resume",
    danger: suspend,
  });
  if (!ok) return;
  await act(() => request(`${jobPath(namespace, name)}/commands`, { method: "POST", body: { action } }), suspend ? "suspended" : "resumed");
}

async function scale(t) {
  const value = await confirmAction({
    title: `Scale ${t.name} of ${name}`,
    text: `Between ${t.min} and ${t.max} replicas (now ${t.replicas}). The launchers re-form at the new size and resume from their checkpoint.`,
    confirm: "Scale",
    input: { min: t.min, max: t.max, value: t.replicas, label: "replicas" },
  });
  if (value === null) return;
  await act(() => request(`${jobPath(namespace, name)}/scale`, { method: "POST", body: { replicas: Number(value), task: t.name } }), `scaled to ${value}`);
}

async function remove() {
  const ok = await confirmAction({
    title: `Delete ${name}?`, text: "Its pods are stopped and the job is removed. This cannot be undone.", confirm: "Delete", danger: true });
  if (!ok) return;
  await act(() => request(jobPath(namespace, name), { method: "DELETE" }), "deleted");
}

async function act(call, done) {
  try {
    await call();
    notice(`${name}: ${done}`);
  } catch (e) {
    showError(e);
  }
}

function renderPods(s) {
  const pods = s.pods ?? [];
  replace(podsPanel, h("h2", {}, `Tasks and pods (${pods.length})`),
    pods.length ? h("table", {},
      h("thead", {}, h("tr", {}, ["Rank", "Pod", "Task", "Phase", "Node", "Restarts", "Exit", "Address", ""].map((c) => h("th", {}, c)))),
      h("tbody", {}, pods.map((p, rank) => h("tr", { dataset: { pod: p.name } },
        h("td", { class: "num" }, rank), h("td", {}, p.name), h("td", {}, p.task), h("td", {}, phaseBadge(p.reason || p.phase)),
        h("td", {}, p.node ?? "-"), h("td", { class: "num" }, p.restarts ?? 0), h("td", { class: "num" }, p.exitCode ?? "-"),
        h("td", { class: "mono" }, p.address ?? "-"),
        h("td", {}, h("button", { type: "button", onclick: () => logs.select(p.name) }, "log"))))))
      : h("p", { class: "muted" }, "No pods yet: they are created once the job's podgroup is admitted (Inqueue)."));
}

const GOOD = /^(Running|Succeeded|Completed|Inqueue|Bind|Scheduled)$/;
const BAD = /^(Failed|Aborted|Terminated|Evicted|Preempt|Reclaim|NodeLost|Killed|Unschedulable|Deleted|Restarted)$/;

function renderEvents(events, created) {
  const start = Number(created) || (events[0]?.time ?? 0);
  replace(eventsPanel, h("h2", {}, `Events (${events.length})`),
    events.length ? h("ol", { class: "tl" }, events.map((e) => {
      const key = e.reason || e.kind;
      const cls = BAD.test(key) || BAD.test(e.kind) ? "bad" : GOOD.test(key) || GOOD.test(e.kind) ? "good" : "warn";
      return h("li", { class: cls },
        h("span", { class: "when", title: clockTime(e.time) }, `+${duration(e.time - start)}`),
        h("strong", {}, e.kind), e.reason ? ` ${e.reason}` : "", " · ", e.object, e.node ? ` on ${e.node}` : "",
        e.message ? h("div", { class: "muted" }, e.message) : null);
    })) : h("p", { class: "muted" }, "none"));
}

function relevant(ev) {
  const o = ev.object ?? {};
  const meta = o.metadata ?? {};
  if (o.kind === "Job") return meta.name === name;
  if (o.spec?.job !== undefined) return o.spec.job === name;
  return String(meta.name ?? "").startsWith(`${name}-`);
}

// Loads at most every 300 ms: changes in between come together.
let timer = null, loading = false, again = false;
function refresh() {
  if (loading) return void (again = true);
  if (timer !== null) return;
  timer = setTimeout(async () => {
    timer = null;
    loading = true;
    try {
      await load();
    } catch (e) {
      showError(e);
    } finally {
      loading = false;
      if (again) {
        again = false;
        refresh();
      }
    }
  }, 300);
}

(async () => {
  // The answer says the version to watch from; from a daemon whose answer does not, the version read
  // before loading again (so that no change after the view is missed).
  await load().catch(showError);
  let version = current?.resourceVersion;
  if (typeof version !== "number") {
    version = await currentVersion();
    await load().catch(showError);
  }
  ready();
  watch({
    kinds: ["Job", "Pod", "PodGroup"],
    namespace,
    resourceVersion: version,
    onEvents: (events) => {
      for (const ev of events) {
        if (ev.object?.kind === "Job" && ev.object.metadata?.name === name) deleted = ev.type === "DELETED";
      }
      if (events.some(relevant)) refresh();
    },
    onExpired: async () => {
      const v = await currentVersion();
      refresh();
      return v;
    },
    onState: setLive,
  });
  // Age and duration move with the clock alone.
  setInterval(() => {
    if (!current || gone) return;
    const s = current.summary;
    const [ageCell, durationCell] = [document.getElementById("age"), document.getElementById("duration")];
    if (ageCell) ageCell.textContent = age(s.creationTimestamp);
    if (durationCell) durationCell.textContent = jobDuration(s.startTime, s.completionTime);
  }, 1000);
})();
