// A confirmation before anything that changes a job: a modal <dialog>, resolved with the value of its
// input (if it has one), true, or null when cancelled.

import { h } from "./dom.js";

export function confirmAction({ title, text, confirm, danger = false, input = null }) {
  return new Promise((resolve) => {
    const field = input ? h("input", { type: "number", id: "dialog-input", ...input }) : null;
    const dlg = h("dialog", { id: "confirm", "aria-labelledby": "confirm-title" },
      h("h2", { id: "confirm-title" }, title),
      h("p", {}, text),
      field ? h("label", { class: "row" }, input.label ?? "", field) : null,
      h("div", { class: "actions" },
        h("button", { type: "button", id: "confirm-cancel", onclick: () => dlg.close("") }, "Cancel"),
        h("button", { type: "button", id: "confirm-ok", class: `primary${danger ? " danger" : ""}`,
          onclick: () => dlg.close("ok") }, confirm)));
    dlg.addEventListener("close", () => {
      const ok = dlg.returnValue === "ok";
      dlg.remove();
      resolve(ok ? (field ? field.value : true) : null);
    });
    document.body.append(dlg);
    dlg.showModal();
    (field ?? dlg.querySelector("#confirm-cancel")).focus();
  });
}
