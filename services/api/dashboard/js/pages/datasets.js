// #/datasets: upload a JSONL dataset (POST /v1/datasets, multipart), the datasets this token sees,
// a preview of each one's first rows (GET /v1/datasets/ID/rows) and Delete.

import { api, listAll } from "../api.js";
import { bytes, errorBox, fill, h, table, when } from "../dom.js";
import { apiForm, input, labelled } from "../forms.js";

const PREVIEW_ROWS = 5;

function uploadForm(refresh) {
  const file = input({ type: "file", accept: ".jsonl,.json,application/jsonl" });
  const name = input({ placeholder: "the file's name" });
  const workload = input({ placeholder: "your default", size: 14 });
  return apiForm("dataset-form", [h("div", { class: "form-grid" },
    labelled("JSONL file", "file", file, "one row a line: chat, completion or prompt rows (docs/datasets.md)"),
    labelled("name", "name", name), labelled("workload", "workload", workload))], {
    build: () => {
      const data = new FormData();
      if (file.files[0]) data.append("file", file.files[0]);
      if (name.value.trim()) data.append("name", name.value.trim());
      if (workload.value.trim()) data.append("workload", workload.value.trim());
      return data;
    },
    send: (data) => api.upload("/v1/datasets", data),
    done: (doc) => { file.value = ""; name.value = ""; refresh(doc.id); },
    submit: "Upload",
  });
}

async function preview(slot, dataset) {
  try {
    const page = await api.get(`/v1/datasets/${dataset.id}/rows?limit=${PREVIEW_ROWS}`);
    fill(slot, h("div", { class: "preview", "data-preview": dataset.id },
      h("p", { class: "muted" }, `first ${page.rows.length} of ${page.totalRows} rows of ${dataset.name}`),
      page.rows.map((row, i) => h("pre", { class: "row-json", "data-row": i }, JSON.stringify(row, null, 1)))));
  } catch (err) { fill(slot, errorBox(err)); }
}

export default async function datasetsPage(main, _params, life) {
  const body = h("div", { id: "datasets" });
  const slot = h("div", { id: "dataset-preview" });
  const message = h("div", { id: "datasets-message" });
  let fresh = null;

  async function refresh(created = null) {
    if (created) fresh = created;
    let items;
    try { items = await listAll("/v1/datasets"); } catch (err) { fill(body, errorBox(err)); return; }
    const rows = items.map((d) => h("tr", { "data-dataset": d.id, class: d.id === fresh ? "fresh" : null },
      h("td", {}, d.name, h("br"), h("code", {}, d.id)), h("td", {}, d.rows), h("td", {}, d.format),
      h("td", {}, d.modality), h("td", {}, bytes(d.bytes)), h("td", {}, d.workload), h("td", {}, when(d.createdAt)),
      h("td", { class: "row" },
        h("button", { type: "button", class: "preview-button", onclick: () => preview(slot, d) }, "Preview"),
        h("button", { type: "button", class: "delete-button", onclick: () => remove(d) }, "Delete"))));
    fill(body, rows.length ? table(["dataset", "rows", "format", "modality", "size", "workload", "uploaded", ""], rows)
      : h("p", { class: "muted" }, "no datasets"));
  }

  async function remove(dataset) {
    if (!window.confirm(`Delete dataset ${dataset.name} (${dataset.id})?`)) return;
    fill(message);
    try {
      await api.delete(`/v1/datasets/${dataset.id}`);
      fill(slot);
    } catch (err) { fill(message, errorBox(err)); }
    await refresh();
  }

  main.append(h("h1", {}, "Datasets"), uploadForm(refresh), message, body, slot);
  await refresh();
  life.every(5000, () => refresh());
}
