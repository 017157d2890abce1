// A long table drawn a window at a time: of its rows (keys, in order) only those in or near the
// viewport are in the DOM, between two spacer rows that keep the table's full height, so a table of
// ten thousand rows opens, scrolls and updates as fast as one of fifty. Rows have one height (the
// CSS keeps a row on one line), measured from the first row drawn. The page scrolls as usual.

import { h } from "./dom.js";

const OVERSCAN = 20; // rows drawn beyond each edge of the viewport
const GUESS = 31; // px per row until one is measured

export function windowedRows({ tbody, columns, render }) {
  const gap = () => h("tr", { class: "gap", "aria-hidden": "true" }, h("td", { colspan: columns }));
  const above = gap(), below = gap();
  let keys = [];
  let drawn = new Map(); // key → its <tr> in the DOM now
  let from = 0, to = 0;
  let height = 0;
  let frame = null;
  tbody.replaceChildren(above, below);

  // The rows (keys) the table has now, in order (the rows in view that were drawn stay as they are).
  function set(next) {
    keys = next;
    draw(true);
  }

  // A row's data changed: drawn again if it is in view.
  function changed(key) {
    const old = drawn.get(key);
    if (!old) return;
    const tr = render(key);
    drawn.set(key, tr);
    old.replaceWith(tr);
  }

  function draw(force = false) {
    frame = null;
    const rowHeight = height || GUESS;
    const top = -tbody.getBoundingClientRect().top; // the viewport's top, from the first row's
    const first = clamp(Math.floor(top / rowHeight) - OVERSCAN, keys.length);
    const last = clamp(Math.ceil((top + window.innerHeight) / rowHeight) + OVERSCAN, keys.length);
    if (!force && first === from && last === to) return;
    [from, to] = [first, last];
    const next = new Map();
    const rows = [];
    for (let i = first; i < last; i++) {
      const key = keys[i];
      const tr = drawn.get(key) ?? render(key);
      next.set(key, tr);
      rows.push(tr);
    }
    drawn = next;
    tbody.replaceChildren(above, ...rows, below);
    above.firstChild.style.height = `${first * rowHeight}px`;
    below.firstChild.style.height = `${(keys.length - last) * rowHeight}px`;
    if (!height && rows.length) {
      height = rows[0].getBoundingClientRect().height || GUESS;
      if (Math.abs(height - rowHeight) > 0.5) draw(true); // the window as it really is
    }
  }

  function schedule() {
    if (frame === null) frame = requestAnimationFrame(() => draw());
  }
  window.addEventListener("scroll", schedule, { passive: true });
  window.addEventListener("resize", schedule);

  return { set, changed, drawn: () => drawn, size: () => keys.length };
}

const clamp = (i, n) => Math.max(0, Math.min(n, i));
