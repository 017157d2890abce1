// The daemon's API as the dashboard uses it: JSON requests and the watch stream, both with the
// session's CSRF token (the cookie alone is refused by the API). A 401 means the session ended:
// the page goes to the login page. Nothing here polls: changes come through `watch`.

const csrf = document.querySelector('meta[name="caldera-csrf"]')?.content ?? "";

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.error ?? `HTTP ${status}`);
    this.status = status;
    this.reason = body?.reason ?? "";
  }
}

function toLogin() {
  const here = location.pathname + location.search;
  location.assign(`/login?next=${encodeURIComponent(here)}`);
}

export async function request(path, { method = "GET", body, signal } = {}) {
  const headers = { "X-Caldera-CSRF": csrf, Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const r = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
    credentials: "same-origin",
  });
  if (r.status === 401) {
    toLogin();
    throw new ApiError(401, { error: "logged out" });
  }
  const text = await r.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = { error: text };
  }
  if (!r.ok) throw new ApiError(r.status, data);
  return data;
}

export const getJSON = (path, signal) => request(path, { signal });

// The page's first data, written into it by the server (what its first API request would answer; see
// the server's firstview.py), once: null after that, or when the page came without it.
let first = document.getElementById("caldera-first");
export function firstData() {
  const el = first;
  first = null;
  if (!el) return null;
  el.remove();
  return JSON.parse(el.textContent);
}

const q = encodeURIComponent;
export const JOBS = "/apis/batch.volcano.sh/v1alpha1";
export const jobPath = (ns, name) => `${JOBS}/namespaces/${q(ns)}/jobs/${q(name)}`;
export const logPath = (ns, pod) => `/api/v1/namespaces/${q(ns)}/pods/${q(pod)}/log`;

// Watch: every event of `kinds` (in `namespace`, if given) after `resourceVersion`; with no version,
// first every object as ADDED, then a BOOKMARK (onSynced), then the changes. Reconnects from the last
// version it saw when the stream ends; `onExpired` when that version is too old (see `expired`).
// `onState(connected)` tells the page whether it is live. Returns a function that stops it.
export function watch({ kinds = [], namespace, resourceVersion, onEvents, onSynced, onExpired, onState }) {
  const stop = new AbortController();
  let version = resourceVersion ?? null;
  let delay = 250;
  // The version is older than the daemon keeps: the caller lists again (its answer may say from which
  // version to go on; else the watch starts over with every object as ADDED).
  const expired = async () => {
    const v = await onExpired?.();
    return typeof v === "number" ? v : null;
  };
  (async () => {
    while (!stop.signal.aborted) {
      try {
        const params = new URLSearchParams(kinds.map((k) => ["kind", k]));
        if (namespace) params.set("namespace", namespace);
        if (version !== null) params.set("resourceVersion", String(version));
        params.set("allowWatchBookmarks", "true");
        const r = await fetch(`/api/v1/watch?${params}`, {
          headers: { "X-Caldera-CSRF": csrf, Accept: "application/json" },
          signal: stop.signal,
          credentials: "same-origin",
        });
        if (r.status === 401) return toLogin();
        if (r.status === 410) {
          version = await expired();
          continue;
        }
        if (!r.ok) throw new ApiError(r.status, await r.json().catch(() => null));
        onState?.(true);
        delay = 250;
        stream: for await (const batch of lines(r.body, stop.signal)) {
          const events = [];
          for (const line of batch) {
            const ev = JSON.parse(line);
            if (ev.type === "ERROR") {
              if (events.length) onEvents?.(events.splice(0));
              if (ev.object?.code === 410) version = await expired();
              break stream;
            }
            const rv = Number(ev.object?.metadata?.resourceVersion);
            if (rv > (version ?? 0)) version = rv;
            if (ev.type === "BOOKMARK") {
              if (events.length) onEvents?.(events.splice(0));
              onSynced?.(version);
            } else {
              events.push(ev);
            }
          }
          if (events.length) onEvents?.(events);
        }
      } catch (e) {
        if (stop.signal.aborted) return;
        console.warn("watch interrupted:", e.message);
      }
      onState?.(false);
      await pause(delay, stop.signal);
      delay = Math.min(delay * 2, 5000);
    }
  })();
  return () => stop.abort();
}

// The complete lines of a byte stream, in batches (all the lines one read brought).
async function* lines(body, signal) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  signal.addEventListener("abort", () => reader.cancel().catch(() => {}), { once: true });
  let rest = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    rest += value;
    const cut = rest.lastIndexOf("\n");
    if (cut < 0) continue;
    const batch = rest.slice(0, cut).split("\n").filter((l) => l.trim());
    rest = rest.slice(cut + 1);
    if (batch.length) yield batch;
  }
}

export function pause(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
  });
}

// The version the cluster is at now (watch from it after reading a view).
export async function currentVersion() {
  return Number((await getJSON("/info")).resourceVersion ?? 0);
}
