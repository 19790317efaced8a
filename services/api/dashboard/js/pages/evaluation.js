// #/evaluations/ID: one evaluation: what it scored, its metrics, and its per-row results (prompt,
// completion, reference and each score) once it has them.

import { api } from "../api.js";
import { badge, errorBox, field, fill, h, link, num, when } from "../dom.js";
import { rowsTable } from "../samples.js";

const TERMINAL = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);

// Its metrics, one field each; a group of them (rewards: {NAME: mean}) one field per member.
function metricFields(metrics) {
  return Object.entries(metrics || {}).filter(([name]) => name !== "rows").flatMap(([name, value]) =>
    (value && typeof value === "object" ? Object.entries(value).map(([k, v]) => field(`${name} ${k}`, num(v)))
      : [field(name, num(value))]));
}

export default async function evaluationPage(main, [evaluationId], life) {
  const summary = h("section", { class: "summary", id: "evaluation-summary" });
  const rows = h("div", { id: "rows" }, h("p", { class: "muted" }, "its rows are shown once it has scored them all"));
  main.append(h("h1", {}, "Evaluation ", h("code", {}, evaluationId), " ", h("span", { id: "evaluation-status" })),
    summary, h("section", {}, h("h2", {}, "Rows"), rows));
  let evaluation;
  let rowsShown = false;

  async function refresh() {
    evaluation = await api.get(`/v1/evaluations/${encodeURIComponent(evaluationId)}`);
    const e = evaluation, p = e.progress || {};
    fill(document.getElementById("evaluation-status"), badge(e.status));
    fill(summary,
      field("model", e.model),
      field("snapshot", e.snapshot ? h("span", {}, h("code", {}, e.snapshot),
        e.run ? [" of ", link(`#/runs/${e.run}`, e.run), ` @ step ${e.step ?? "?"}`] : null) : "none (the base model)"),
      field("dataset", h("code", {}, e.dataset)),
      field("rows", `${num(p.rows)} of ${num(p.totalRows)}`),
      metricFields(e.metrics),
      e.comparison ? field("comparison", link(`#/comparisons/${e.comparison}`, e.comparison)) : null,
      field("created", when(e.createdAt)),
      e.detail ? field("detail", e.detail) : null);
    if (e.status === "SUCCEEDED" && !rowsShown) {
      rowsShown = true;
      try { fill(rows, await rowsTable(evaluationId)); } catch (err) { fill(rows, errorBox(err)); }
    }
  }
  await refresh();
  life.every(3000, async () => { if (!TERMINAL.has(evaluation.status)) await refresh(); });
}
