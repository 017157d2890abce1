// Building the page: elements from data (never HTML strings, so no name can inject markup and the
// Content-Security-Policy needs no inline style), and how times, durations and quantities read.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "style") Object.assign(el.style, v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export const main = () => document.getElementById("main");

// The page is ready: its first data is on screen (tests and the benchmark wait for this).
export function ready() {
  if (document.documentElement.dataset.ready) return;
  document.documentElement.dataset.ready = "true";
  performance.mark("caldera:ready");
}

export function showError(e) {
  const box = document.getElementById("flash") ?? document.body.appendChild(h("div", { id: "flash", role: "alert" }));
  box.className = "flash error";
  box.textContent = e?.message ?? String(e);
  clearTimeout(showError.timer);
  showError.timer = setTimeout(() => box.remove(), 8000);
}

export function notice(text) {
  const box = document.getElementById("flash") ?? document.body.appendChild(h("div", { id: "flash", role: "status" }));
  box.className = "flash";
  box.textContent = text;
  clearTimeout(showError.timer);
  showError.timer = setTimeout(() => box.remove(), 4000);
}

// ------------------------------------------------------------------ time

export const now = () => Date.now() / 1000;

export function duration(seconds) {
  if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return "-";
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return s % 60 ? `${Math.floor(s / 60)}m${s % 60}s` : `${s / 60}m`;
  if (s < 86400) {
    const m = Math.floor((s % 3600) / 60);
    return m ? `${Math.floor(s / 3600)}h${m}m` : `${Math.floor(s / 3600)}h`;
  }
  const hours = Math.floor((s % 86400) / 3600);
  return hours ? `${Math.floor(s / 86400)}d${hours}h` : `${Math.floor(s / 86400)}d`;
}

export const age = (t) => (t ? duration(now() - Number(t)) : "-");

export function jobDuration(start, end) {
  if (!start) return "-";
  return duration((end ? Number(end) : now()) - Number(start));
}

// Formatters made once: `toLocaleTimeString` builds one per call, which costs ~0.1 ms, a table's worth per page.
// Only the month-and-day labels use one: the first Intl.DateTimeFormat of a page loads the locale's data, about
// 50 ms of a first visit's CPU, which hours, minutes and seconds do not need.
const formats = new Map();
export function formatTime(t, options) {
  const key = JSON.stringify(options);
  let f = formats.get(key);
  if (!f) formats.set(key, (f = new Intl.DateTimeFormat([], options)));
  return f.format(new Date(Number(t) * 1000));
}
const DATE = { year: "numeric", month: "numeric", day: "numeric" };
const pad = (n) => (n < 10 ? `0${n}` : `${n}`);

// Local time, 24-hour: "14:05" and "14:05:09".
export function hourMinute(t) {
  const d = new Date(Number(t) * 1000);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function clockTime(t) {
  if (!t) return "-";
  const d = new Date(Number(t) * 1000);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export const dateTime = (t) => (t ? `${formatTime(t, DATE)} ${clockTime(t)}` : "-");

// ------------------------------------------------------------------ quantities

const SUFFIX = {
  n: 1e-9, u: 1e-6, m: 1e-3, "": 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};

// A Kubernetes quantity ("500m", "16Gi", "2") as a number of units (cores, bytes, GPUs).
export function quantity(text) {
  if (text === undefined || text === null || text === "") return 0;
  const m = /^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$/.exec(String(text).trim());
  if (!m || !(m[2] in SUFFIX)) return Number(text) || 0;
  return Number(m[1]) * SUFFIX[m[2]];
}

export const GPU = "nvidia.com/gpu";
export const RESOURCE_NAMES = { [GPU]: "GPUs", cpu: "CPUs", memory: "Memory" };

// How an amount of a resource reads: bytes in binary units, the rest as numbers.
export function amount(resource, value) {
  if (resource === "memory" || resource.endsWith("storage")) {
    const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let v = value, i = 0;
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return `${v >= 100 || i === 0 ? Math.round(v) : v.toFixed(1).replace(/\.0$/, "")} ${units[i]}`;
  }
  return Number.isInteger(value) ? String(value) : value.toFixed(2).replace(/\.?0+$/, "");
}

export const percent = (part, whole) => (whole > 0 ? Math.min(100, (100 * part) / whole) : 0);

// A horizontal bar: `parts` [{value, class, title}] of `whole`, plus optional markers [{value, class, title}].
export function bar(whole, parts, markers = []) {
  const el = h("div", { class: "bar", role: "img" });
  for (const p of parts) {
    const seg = h("span", { class: `fill ${p.class ?? ""}`, title: p.title });
    seg.style.width = `${percent(p.value, whole)}%`;
    el.append(seg);
  }
  for (const m of markers) {
    const mark = h("span", { class: `marker ${m.class ?? ""}`, title: m.title });
    mark.style.left = `${percent(m.value, whole)}%`;
    el.append(mark);
  }
  el.setAttribute("aria-label", parts.map((p) => p.title).filter(Boolean).join("; "));
  return el;
}

export function phaseBadge(phase) {
  return h("span", { class: `phase phase-${String(phase || "unknown").toLowerCase()}` }, phase || "-");
}

// A stable colour per name (jobs on the timeline and the nodes page).
export function colour(name) {
  let x = 2166136261;
  for (let i = 0; i < name.length; i++) x = Math.imul(x ^ name.charCodeAt(i), 16777619);
  const hue = (x >>> 0) % 360;
  return `hsl(${hue} 55% 55%)`;
}

export function link(href, text, attrs = {}) {
  return h("a", { href, ...attrs }, text);
}

export const jobHref = (ns, name) => `/jobs/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`;
