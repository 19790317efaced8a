// What a snapshot row of the run page can start: an evaluation on a dataset (POST /v1/evaluations),
// an endpoint serving it (POST /v1/endpoints), its adapter's download, a branch from it. And the
// evaluations of the run's snapshots (GET /v1/evaluations?run=RUN), followed while shown.

import { api, download, listAll } from "../api.js";
import { badge, errorBox, fill, h, num, table } from "../dom.js";
import { apiForm, labelled, select } from "../forms.js";

async function evaluateForm(run, snapshot, done) {
  const datasets = await listAll("/v1/datasets");
  const dataset = select(datasets.map((d) => [d.id, `${d.name} (${d.rows} rows)`]));
  return apiForm("evaluate-form", [h("p", {}, "Evaluate ", h("code", {}, snapshot.id), ` (step ${snapshot.step}) on`),
    labelled("dataset", "dataset", dataset)], {
    build: () => ({ model: run.plan.model, snapshot: snapshot.id, dataset: dataset.value }),
    send: (body) => api.post("/v1/evaluations", body), done, submit: "Evaluate",
  });
}

// The buttons of one snapshot row; `slot` holds the form one opens, `branch(snapshotId)` opens the branch form.
export function snapshotActions(run, snapshot, { slot, branch, showError, evaluated }) {
  const loadable = Boolean(snapshot.readable && snapshot.readable.weights);
  const act = async (call) => { try { await call(); } catch (err) { showError(err); } };
  return h("td", { class: "row snapshot-actions" },
    h("button", { type: "button", class: "evaluate", disabled: !loadable, onclick: () => act(async () => {
      fill(slot, await evaluateForm(run, snapshot, (evaluation) => { fill(slot); evaluated(evaluation); }));
    }) }, "Evaluate…"),
    h("button", { type: "button", class: "serve", disabled: !loadable, onclick: () => act(async () => {
      const endpoint = await api.post("/v1/endpoints", { model: run.plan.model, snapshot: snapshot.id });
      location.hash = `#/endpoints/${endpoint.id}`;
    }) }, "Serve"),
    h("button", { type: "button", class: "download", disabled: !loadable, onclick: () => act(
      () => download(`/v1/snapshots/${snapshot.id}/adapter`, `${snapshot.id}-adapter.tar.gz`)) }, "Download"),
    h("button", { type: "button", class: "branch-from", disabled: !loadable, onclick: () => branch(snapshot.id) }, "Branch…"));
}

export function evaluationsList(runId) {
  const el = h("div", { id: "evaluations" });
  async function refresh() {
    try {
      const items = (await api.get(`/v1/evaluations?run=${runId}&limit=200`)).items;
      const rows = items.map((e) => h("tr", { "data-evaluation": e.id },
        h("td", {}, h("code", {}, e.id)), h("td", {}, badge(e.status)), h("td", {}, h("code", {}, e.snapshot)),
        h("td", {}, e.step), h("td", {}, h("code", {}, e.dataset)),
        h("td", {}, `${e.progress.rows}/${e.progress.totalRows ?? "?"}`),
        h("td", {}, num((e.metrics || {}).loss)), h("td", {}, num((e.metrics || {}).exactMatch))));
      fill(el, rows.length ? table(["evaluation", "status", "snapshot", "step", "dataset", "rows", "loss", "exact match"], rows)
        : h("p", { class: "muted" }, "none: Evaluate… on a snapshot starts one"));
    } catch (err) { fill(el, errorBox(err)); }
  }
  return { el, refresh };
}
