// #/comparisons/ID: the snapshots of a comparison (and its base model's row) side by side, the best at each
// metric marked once every row has ended (the API marks none before).

import { api } from "../api.js";
import { badge, fill, h, link, num } from "../dom.js";

const TERMINAL = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);
const ORDER = ["loss", "perplexity", "exactMatch", "judge"];

function metricNames(rows) {
  const names = new Set();
  rows.forEach((r) => Object.keys(r.metrics || {}).forEach((k) => names.add(k)));
  return [...names].sort((a, b) => (ORDER.indexOf(a) + 1 || 99) - (ORDER.indexOf(b) + 1 || 99) || a.localeCompare(b));
}

export default async function comparisonPage(main, [comparisonId], life) {
  const head = h("h1", {}, "Comparison ", h("code", {}, comparisonId), " ", h("span", { id: "comparison-status" }));
  const info = h("p", { class: "muted" });
  const grid = h("div", { id: "comparison-table" });
  main.append(head, info, grid);
  let comparison;

  async function refresh() {
    comparison = await api.get(`/v1/comparisons/${encodeURIComponent(comparisonId)}`);
    fill(document.getElementById("comparison-status"), badge(comparison.status));
    info.textContent = `${comparison.model} on dataset ${comparison.dataset} in pool ${comparison.pool}; ` +
      (TERMINAL.has(comparison.status)
        ? "★ marks the best row at each metric (lowest loss and perplexity, highest scores)."
        : "★ marks the best row at each metric once every row has ended.");
    const names = metricNames(comparison.rows);
    // one column per snapshot, side by side; one row per metric
    const columns = comparison.rows.map((r) => r.base
      ? h("th", { "data-snapshot": "base" }, h("code", {}, comparison.model), h("br"), "base model",
        h("br"), h("span", { class: "muted" }, "no adapter"))
      : h("th", { "data-snapshot": r.snapshot },
        h("code", {}, r.snapshot), h("br"), r.run ? link(`#/runs/${r.run}`, r.run) : "imported",
        h("br"), h("span", { class: "muted" }, `step ${r.step ?? "?"} · ${r.restore}`)));
    const statusRow = h("tr", {}, h("th", {}, "evaluation"), comparison.rows.map((r) => h("td", {}, badge(r.status || "–"),
      r.evaluation ? [" ", link(`#/evaluations/${r.evaluation}`, "rows")] : null)));
    const metricRows = names.map((name) => h("tr", { "data-metric": name }, h("th", {}, name),
      comparison.rows.map((r) => {
        const best = (r.best || []).includes(name);
        return h("td", { class: best ? "best" : null, "data-best": best ? "true" : null },
          num((r.metrics || {})[name]), best ? " ★" : "");
      })));
    fill(grid, h("table", { class: "comparison" }, h("thead", {}, h("tr", {}, h("th", {}, "metric"), columns)),
      h("tbody", {}, statusRow, metricRows)),
    names.length ? null : h("p", { class: "muted" }, "no metrics yet: its evaluations are under way"));
  }
  await refresh();
  life.every(3000, async () => { if (!TERMINAL.has(comparison.status)) await refresh(); });
}
