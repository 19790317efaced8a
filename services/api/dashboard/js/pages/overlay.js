// The run page's "overlay" switches: the curves of the run's parent and branches drawn on its
// charts beside its own (each run's metrics read when it is switched on).

import { api, follower, listAll } from "../api.js";
import { h } from "../dom.js";

export function overlayControl(run, changed) {
  const el = h("div", { class: "overlay", id: "overlay" });
  const shown = new Map();  // run id -> {name, points, next}

  async function toggle(other, on) {
    if (!on) { shown.delete(other.id); changed(); return; }
    const entry = { name: other.name || other.id, points: [], next: follower(`/v1/runs/${other.id}/metrics`) };
    shown.set(other.id, entry);
    await pull(entry);
  }
  async function pull(entry) {
    for (let fresh = await entry.next(); fresh.length; fresh = await entry.next()) entry.points.push(...fresh);
    changed();
  }

  async function load() {
    const runs = await listAll("/v1/runs");
    const related = runs.filter((r) => r.id !== run.id
      && ((r.parent && r.parent.run === run.id) || (run.parent && run.parent.run === r.id)));
    if (!related.length) return;
    el.append(h("span", { class: "muted" }, "overlay:"), ...related.map((r) => h("label", { "data-overlay": r.id },
      h("input", { type: "checkbox", onchange: (e) => toggle(r, e.target.checked) }),
      ` ${r.name || r.id} (${run.parent && run.parent.run === r.id ? "parent" : `branch, ${r.parent.restore}`})`)));
  }
  return { el, load, list: () => [...shown.values()] };
}
