// The run page's plan panel: the run's resolved plan field by field, each whose value is the one
// the API fills in when a plan leaves it out (GET /v1/plans/defaults) marked "default", and for a
// branch the parent's value beside it, the fields that differ marked "changed".

import { api } from "../api.js";
import { h, table } from "../dom.js";

// {"hyperparameters.maxSteps": 12, ...}: an object's leaves by dotted path (lists are leaves).
export function flatten(value, prefix = "", out = {}) {
  if (value && typeof value === "object" && !Array.isArray(value)) {
    for (const [key, inner] of Object.entries(value)) flatten(inner, prefix ? `${prefix}.${key}` : key, out);
  } else if (prefix) {
    out[prefix] = value;
  }
  return out;
}

const same = (a, b) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
const shown = (value) => (value === null || value === undefined ? "–" : typeof value === "object" ? JSON.stringify(value) : String(value));

async function parentPlan(run) {
  if (!run.parent || !run.parent.run) return { plan: null, why: run.parent ? "the parent is an imported snapshot" : "" };
  try {
    return { plan: (await api.get(`/v1/runs/${run.parent.run}`)).plan, why: "" };
  } catch (err) { return { plan: null, why: err.message }; }
}

export async function planPanel(run) {
  const [{ defaults }, parent] = await Promise.all([api.get("/v1/plans/defaults"), parentPlan(run)]);
  const mine = flatten(run.plan);
  const theirs = parent.plan ? flatten(parent.plan) : null;
  const paths = [...new Set([...Object.keys(mine), ...Object.keys(theirs || {})])].sort();
  const rows = paths.map((path) => {
    const isDefault = path in defaults && same(mine[path], defaults[path]);
    const changed = theirs !== null && !same(mine[path], theirs[path]);
    return h("tr", { "data-path": path, class: [isDefault ? "default" : "", changed ? "changed" : ""].join(" ").trim() || null },
      h("td", {}, h("code", {}, path)), h("td", { class: "value" }, shown(mine[path])),
      h("td", {}, isDefault ? h("span", { class: "tag" }, "default") : ""),
      theirs ? h("td", { class: "parent-value" }, shown(theirs[path]), changed ? h("span", { class: "tag changed-tag" }, "changed") : "") : null);
  });
  const changedCount = rows.filter((r) => r.classList.contains("changed")).length;
  const onlyChanged = h("input", { type: "checkbox", id: "plan-only-changed", onchange: () => {
    rows.forEach((r) => { r.hidden = onlyChanged.checked && !r.classList.contains("changed"); });
  } });
  const columns = ["field", "value", "", ...(theirs ? [`parent ${run.parent.run}`] : [])];
  return h("details", { class: "plan-panel", id: "plan-panel" },
    h("summary", {}, "Plan ", h("span", { class: "muted" },
      `${paths.length} fields, ${rows.filter((r) => r.classList.contains("default")).length} at their default`
      + (theirs ? `, ${changedCount} changed from the parent` : ""))),
    theirs ? h("label", { class: "row" }, onlyChanged, "only the fields that differ from the parent") : null,
    parent.why ? h("p", { class: "muted" }, `no diff against the parent: ${parent.why}`) : null,
    table(columns, rows, { class: "plan" }));
}
