// Keeping a view live: load it (the answer says the version it is at), then watch from that
// version and load it again when something it shows changed, at most once per `every` ms
// (changes in between are gathered into the next load). Only the watch stream is open while
// nothing changes: no polling.

import { currentVersion, watch } from "./api.js";
import { ready, showError } from "./dom.js";

export function setLive(connected) {
  const el = document.getElementById("live");
  if (!el) return;
  el.textContent = connected ? "live" : "reconnecting…";
  el.classList.toggle("on", connected);
}

export function follow({ load, kinds, namespace, relevant = () => true, every = 1000 }) {
  let loading = null;
  let again = false;
  let last = 0;
  let timer = null;
  let stopWatch = null;

  async function reload() {
    if (loading) {
      again = true;
      return loading;
    }
    last = performance.now();
    loading = (async () => {
      try {
        return await load();
      } catch (e) {
        showError(e);
        return null;
      } finally {
        loading = null;
        if (again) {
          again = false;
          schedule();
        }
      }
    })();
    return loading;
  }

  function schedule() {
    if (timer !== null) return;
    const wait = Math.max(0, last + every - performance.now());
    timer = setTimeout(() => {
      timer = null;
      reload();
    }, wait);
  }

  (async () => {
    // The view's version; if it could not be loaded, the cluster's (the next change loads it again).
    const version = (await reload()) ?? (await currentVersion().catch(() => null));
    ready();
    stopWatch = watch({
      kinds,
      namespace,
      resourceVersion: version ?? undefined,
      onEvents: (events) => {
        if (events.some(relevant)) schedule();
      },
      onExpired: () => reload(),
      onState: setLive,
    });
  })();

  return {
    reload: schedule,
    stop: () => stopWatch?.(),
  };
}
