// A pod's log: choose the pod, follow it live, search it. The log streams from
// /api/v1/namespaces/NS/pods/POD/log?follow=true (chunks of text as the pod writes them); the page
// keeps the last MAX_LINES lines and draws at most once a frame.

import { logPath } from "./api.js";
import { h, replace } from "./dom.js";

const MAX_LINES = 5000;
const TAIL = 2000;
const csrf = document.querySelector('meta[name="caldera-csrf"]')?.content ?? "";

export function logViewer(namespace) {
  let pod = null;
  let lines = [""];
  let stream = null;
  let frame = null;
  let state = "";
  let phases = new Map();

  const pre = h("pre", { id: "log", tabindex: "0", "aria-label": "log" });
  const status = h("span", { class: "muted", id: "log-status" });
  const podSelect = h("select", { id: "log-pod", onchange: (e) => open(e.target.value) });
  const followBox = h("input", { type: "checkbox", id: "log-follow", checked: true, onchange: () => open(pod) });
  const search = h("input", { type: "search", id: "log-search", placeholder: "search…", oninput: redraw });
  const el = h("section", { class: "panel logs", id: "logs" },
    h("div", { class: "row" }, h("h2", {}, "Logs"), podSelect,
      h("label", { class: "row" }, followBox, "follow"), search, h("span", { class: "spacer" }), status),
    pre);

  function setStatus(text) {
    state = text;
    status.textContent = text;
  }

  function open(name) {
    stream?.abort();
    stream = null;
    pod = name;
    lines = [""];
    redraw();
    if (!name) return setStatus("no pod");
    // A pod not started has no log yet: it is opened when the pod's phase changes (see `pods`).
    if (phases.get(name) === "Pending") return setStatus("no log yet: the pod has not started");
    const controller = new AbortController();
    stream = controller;
    read(name, followBox.checked, controller.signal);
  }

  async function read(name, follow, signal) {
    setStatus(follow ? "following…" : "loading…");
    try {
      const r = await fetch(`${logPath(namespace, name)}?follow=${follow}&tailLines=${TAIL}`, {
        headers: { "X-Caldera-CSRF": csrf }, signal, credentials: "same-origin" });
      if (r.status === 404) return setStatus("no log yet: the pod has not started");
      if (r.status === 401) return location.assign("/login");
      if (!r.ok) return setStatus(`cannot read the log (HTTP ${r.status})`);
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        add(value);
      }
      setStatus(follow ? "the pod has ended: end of log" : "end of log");
    } catch (e) {
      if (!signal.aborted) setStatus(`log interrupted: ${e.message}`);
    } finally {
      if (stream?.signal === signal) stream = null;
    }
  }

  function add(text) {
    const parts = text.split("\n");
    lines[lines.length - 1] += parts[0];
    for (let i = 1; i < parts.length; i++) lines.push(parts[i]);
    if (lines.length > MAX_LINES) lines = lines.slice(lines.length - MAX_LINES);
    redraw();
  }

  // Drawn at the next frame, once however many changes came before it (drawing measures the layout).
  function redraw() {
    if (frame === null) frame = requestAnimationFrame(draw);
  }

  function draw() {
    frame = null;
    const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    const q = search.value;
    if (!q) {
      pre.textContent = lines.join("\n");
    } else {
      const needle = q.toLowerCase();
      const shown = [];
      for (const line of lines) {
        const at = line.toLowerCase().indexOf(needle);
        if (at < 0) continue;
        shown.push(line.slice(0, at), h("mark", {}, line.slice(at, at + q.length)), line.slice(at + q.length) + "\n");
      }
      replace(pre, shown.length ? shown : h("span", { class: "muted" }, `no line contains “${q}”`));
    }
    if (followBox.checked && (atBottom || !q)) pre.scrollTop = pre.scrollHeight;
  }

  // The job's pods changed: keep the choice, start on rank 0, and open a log that has started since.
  function pods(list) {
    const names = list.map((p) => p.name);
    const have = [...podSelect.options].map((o) => o.value);
    if (names.join("\0") !== have.join("\0")) {
      replace(podSelect, list.map((p, rank) => h("option", { value: p.name }, `${p.name} (rank ${rank})`)));
      if (pod && names.includes(pod)) podSelect.value = pod;
    }
    const before = phases;
    phases = new Map(list.map((p) => [p.name, p.phase]));
    if (pod === null && names.length) return open(names[0]);
    if (pod && !stream && before.get(pod) !== phases.get(pod) && phases.get(pod) !== "Pending") open(pod);
  }

  function select(name) {
    podSelect.value = name;
    open(name);
    el.scrollIntoView({ behavior: "smooth", block: "start" });
  }

  return { el, pods, select, state: () => state };
}
