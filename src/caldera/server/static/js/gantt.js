// A Gantt chart of pod runs on nodes, drawn on one canvas the size of its viewport: rows are lanes
// of a node (runs that overlap in time take separate lanes), the x axis is time. Only the rows in
// view are drawn, so ten thousand runs scroll as smoothly as ten.

import { clockTime, colour, formatTime, h, hourMinute } from "./dom.js";

const LANE = 18;
const HEADER = 26;
const LABEL = 150;
const TAKEN = new Set(["Preempted", "Reclaimed", "Evicted"]);

export function gantt({ onPick }) {
  const canvas = h("canvas", { id: "gantt", "aria-label": "pods on nodes over time" });
  const spacer = h("div");
  const wrap = h("div", { class: "gantt-wrap" }, canvas, spacer);
  const tip = h("div", { class: "gantt-tip", hidden: true });
  let lanes = []; // [{node, first, runs: [segment]}]
  let from = 0, to = 1;

  function set(segments) {
    lanes = pack(segments);
    draw();
  }

  function range(start, end) {
    from = start;
    to = end;
    draw();
  }

  function x(t, width) {
    return LABEL + ((t - from) / (to - from)) * (width - LABEL - 8);
  }

  function draw(now = Date.now() / 1000) {
    const width = wrap.clientWidth;
    const height = wrap.clientHeight;
    const total = HEADER + lanes.length * LANE + 4;
    spacer.style.height = `${Math.max(0, total - height)}px`;
    const dpr = window.devicePixelRatio || 1;
    if (canvas.width !== width * dpr || canvas.height !== height * dpr) {
      canvas.width = width * dpr;
      canvas.height = height * dpr;
      canvas.style.width = `${width}px`;
      canvas.style.height = `${height}px`;
    }
    const g = canvas.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    const css = getComputedStyle(document.documentElement);
    const text = css.getPropertyValue("--text"), muted = css.getPropertyValue("--muted"), line = css.getPropertyValue("--line");
    g.clearRect(0, 0, width, height);
    g.font = "12px system-ui, sans-serif";
    g.textBaseline = "middle";
    const top = wrap.scrollTop;
    const firstLane = Math.max(0, Math.floor(top / LANE));
    const lastLane = Math.min(lanes.length, Math.ceil((top + height) / LANE) + 1);
    for (let i = firstLane; i < lastLane; i++) {
      const lane = lanes[i];
      const y = HEADER + i * LANE - top;
      if (lane.first) {
        g.strokeStyle = line;
        g.beginPath();
        g.moveTo(0, y + 0.5);
        g.lineTo(width, y + 0.5);
        g.stroke();
        g.fillStyle = text;
        g.fillText(lane.node || "(no node)", 8, y + LANE / 2, LABEL - 16);
      }
      for (const s of lane.runs) {
        const end = s.end ?? now;
        if (end < from || s.start > to) continue;
        const x0 = Math.max(LABEL, x(s.start, width));
        const x1 = Math.max(x0 + 2, Math.min(width - 8, x(end, width)));
        g.fillStyle = colour(`${s.namespace}/${s.job || s.pod}`);
        g.globalAlpha = s.end === null ? 1 : 0.8;
        g.fillRect(x0, y + 3, x1 - x0, LANE - 6);
        g.globalAlpha = 1;
        if (s.outcome === "Failed" || TAKEN.has(s.outcome)) {
          g.fillStyle = s.outcome === "Failed" ? "#c2372f" : "#b7791f";
          g.fillRect(x1 - 3, y + 2, 3, LANE - 4);
        }
        if (s.restart) {
          g.fillStyle = "#ffffff";
          g.fillRect(x0, y + 3, 2, LANE - 6);
        }
        if (x1 - x0 > 60) {
          g.fillStyle = "#ffffff";
          g.fillText(s.pod, x0 + 4, y + LANE / 2, x1 - x0 - 8);
        }
      }
    }
    // The time axis, over whatever scrolled under it, and the present.
    g.fillStyle = css.getPropertyValue("--panel");
    g.fillRect(0, 0, width, HEADER);
    g.strokeStyle = line;
    g.beginPath();
    g.moveTo(0, HEADER - 0.5);
    g.lineTo(width, HEADER - 0.5);
    g.stroke();
    g.fillStyle = muted;
    for (const t of ticks(from, to, Math.max(2, Math.floor((width - LABEL) / 110)))) {
      const tx = x(t, width);
      g.fillRect(tx, HEADER - 6, 1, 6);
      g.fillText(label(t, to - from), tx + 3, HEADER / 2);
    }
    if (now >= from && now <= to) {
      g.fillStyle = "#c2372f";
      g.fillRect(x(now, width), HEADER, 1, height - HEADER);
    }
  }

  function pick(ev) {
    const rect = canvas.getBoundingClientRect();
    const px = ev.clientX - rect.left, py = ev.clientY - rect.top + wrap.scrollTop - HEADER;
    const lane = lanes[Math.floor(py / LANE)];
    if (!lane || ev.clientY - rect.top < HEADER) return null;
    const width = wrap.clientWidth, now = Date.now() / 1000;
    return lane.runs.find((s) => px >= x(s.start, width) - 1 && px <= x(s.end ?? now, width) + 1) ?? null;
  }

  canvas.addEventListener("mousemove", (ev) => {
    const s = pick(ev);
    tip.hidden = !s;
    if (!s) return;
    tip.replaceChildren(h("strong", {}, s.pod), h("div", {}, `job ${s.job || "?"} · task ${s.task || "?"} · ${s.node}`),
      h("div", {}, `${clockTime(s.start)} → ${s.end ? clockTime(s.end) : "now"}`),
      h("div", {}, `${s.outcome}${s.exitCode !== null ? ` (exit ${s.exitCode})` : ""}${s.restart ? " · restarted in place" : ""}${s.reason ? ` · ${s.reason}` : ""}`));
    tip.style.left = `${ev.clientX + 14}px`;
    tip.style.top = `${ev.clientY + 12}px`;
  });
  canvas.addEventListener("mouseleave", () => (tip.hidden = true));
  canvas.addEventListener("click", (ev) => {
    const s = pick(ev);
    if (s) onPick?.(s);
  });
  wrap.addEventListener("scroll", () => requestAnimationFrame(() => draw()));
  new ResizeObserver(() => draw()).observe(wrap);

  return { el: h("div", {}, wrap, tip), set, range, lanes: () => lanes };
}

// Lanes per node: each run goes to the first lane of its node free at its start.
function pack(segments) {
  const byNode = new Map();
  for (const s of segments) {
    if (!byNode.has(s.node)) byNode.set(s.node, []);
    byNode.get(s.node).push(s);
  }
  const lanes = [];
  for (const node of [...byNode.keys()].sort(nodeOrder)) {
    const runs = byNode.get(node).sort((a, b) => a.start - b.start);
    const own = [];
    for (const s of runs) {
      const lane = own.find((l) => l.free <= s.start);
      const end = s.end ?? Infinity;
      if (lane) {
        lane.runs.push(s);
        lane.free = end;
      } else {
        own.push({ node, first: own.length === 0, runs: [s], free: end });
      }
    }
    lanes.push(...own);
  }
  return lanes;
}

function nodeOrder(a, b) {
  const [sa, na] = split(a), [sb, nb] = split(b);
  return sa < sb ? -1 : sa > sb ? 1 : na - nb;
}

function split(name) {
  const m = /^(.*?)(\d+)$/.exec(name);
  return m ? [m[1], Number(m[2])] : [name, -1];
}

const STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];

function ticks(from, to, count) {
  const span = to - from;
  const step = STEPS.find((s) => span / s <= count) ?? 604800 * Math.ceil(span / count / 604800);
  const out = [];
  for (let t = Math.ceil(from / step) * step; t <= to; t += step) out.push(t);
  return out;
}

function label(t, span) {
  if (span > 2 * 86400) return formatTime(t, { month: "short", day: "numeric" }) + " " + hourMinute(t);
  return span < 600 ? clockTime(t) : hourMinute(t);
}
