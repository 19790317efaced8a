// #/runs/new: the form that starts a run (POST /v1/runs), with the chosen model's startable runs
// (GET /v1/base-models/MODEL: what the resolver accepts, in which pools) to pick from. Empty
// fields are left out, so the API fills in its defaults (shown as placeholders).

import { api, listAll } from "../api.js";
import { fill, h, num, table } from "../dom.js";
import { apiForm, input, labelled, numberOf, select, setPath } from "../forms.js";

const NUMBERS = [
  ["steps", "hyperparameters.maxSteps"], ["learning rate", "hyperparameters.learningRate"],
  ["batch size", "hyperparameters.batchSize"], ["LoRA rank", "adapter.rank"], ["GPUs", "execution.gpus"],
  ["snapshot every", "snapshots.everySteps"],
];
const GRPO_NUMBERS = [["generations", "grpo.numGenerations"], ["KL penalty", "grpo.klPenalty"]];

function startableTable(model, use) {
  const rows = (model.startableRuns || []).filter((r) => r.restore === "none").map((r) => h("tr", { "data-startable": `${r.method}/${r.gpus}/${r.precision}` },
    h("td", {}, r.method), h("td", {}, r.gpus), h("td", {}, r.precision), h("td", {}, r.klPenalty ? "with KL" : ""),
    h("td", {}, r.engine), h("td", {}, r.pools.join(", ")), h("td", {}, r.memoryGiB == null ? "–" : `${num(r.memoryGiB)} GiB`),
    h("td", {}, h("button", { type: "button", class: "use", onclick: () => use(r) }, "Use"))));
  if (!rows.length) return h("p", { class: "muted" }, `${model.id} can start no run in this deployment's pools`);
  return table(["method", "GPUs", "precision", "", "engine", "pools", "memory/GPU", ""], rows, { class: "startable" });
}

export default async function newRunPage(main) {
  const [models, datasets, defaults, info] = await Promise.all([
    api.get("/v1/base-models"), listAll("/v1/datasets"), api.get("/v1/plans/defaults"), api.get("/v1/info")]);
  const hint = (path) => (defaults.defaults[path] == null ? "" : `default ${defaults.defaults[path]}`);
  const numberInput = ([label, path]) => labelled(label, path,
    input({ type: "number", step: "any", placeholder: hint(path) }));

  const name = input({ placeholder: "optional" });
  const model = select(models.items.map((m) => [m.id]));
  const method = select([["sft"], ["grpo"]]);
  const dataset = select(datasets.map((d) => [d.id, `${d.name} (${d.rows} rows, ${d.format})`]));
  const validation = select([["", "none"], ...datasets.map((d) => [d.id, d.name])]);
  const precision = select([["", `default (${defaults.defaults.precision})`]]);
  const pool = select([["", `default (${info.defaultPool})`], ...info.pools.map((p) => [p.name])]);
  const rewards = input({ placeholder: "exact_match, length", size: 28 });
  const more = h("textarea", { rows: 3, cols: 60, placeholder: '{"hyperparameters": {"warmupSteps": 2}}' });
  const numbers = NUMBERS.map(numberInput);
  const grpoPart = h("fieldset", { class: "grpo-part", hidden: true }, h("legend", {}, "grpo"),
    labelled("rewards", "grpo.rewards", rewards, "reward functions, comma separated"), GRPO_NUMBERS.map(numberInput));
  const startable = h("div", { id: "startable-runs" });

  async function showModel() {
    const doc = await api.get(`/v1/base-models/${model.value}`);
    fill(precision, h("option", { value: "" }, `default (${defaults.defaults.precision})`),
      doc.precisions.map((p) => h("option", { value: p }, p)));
    fill(startable, h("h2", {}, `Runs ${doc.id} can start`), startableTable(doc, (row) => {
      method.value = row.method; precision.value = row.precision; pool.value = row.pools[0] || "";
      main.querySelector("[data-field='execution.gpus']").value = row.gpus;
      method.dispatchEvent(new Event("change"));
    }));
  }
  model.addEventListener("change", showModel);
  method.addEventListener("change", () => { grpoPart.hidden = method.value !== "grpo"; });

  function build() {
    const body = { model: model.value, method: method.value, dataset: dataset.value };
    setPath(body, "name", name.value.trim());
    setPath(body, "validationDataset", validation.value);
    setPath(body, "precision", precision.value);
    setPath(body, "execution.pool", pool.value);
    const numbered = [...NUMBERS, ...(method.value === "grpo" ? GRPO_NUMBERS : [])];
    for (const [, path] of numbered) setPath(body, path, numberOf(main.querySelector(`[data-field='${path}']`)));
    const functions = rewards.value.split(",").map((s) => s.trim()).filter(Boolean);
    if (method.value === "grpo" && functions.length) setPath(body, "grpo.rewards", functions.map((f) => ({ function: f })));
    if (!more.value.trim()) return body;
    let extra;
    try { extra = JSON.parse(more.value); } catch (err) {
      throw Object.assign(new Error(`not JSON: ${err.message}`), { details: { field: "plan" } });
    }
    return merge(body, extra);
  }

  const form = apiForm("run-form", [
    h("div", { class: "form-grid" },
      labelled("name", "name", name), labelled("model", "model", model), labelled("method", "method", method),
      labelled("dataset", "dataset", dataset), labelled("validation dataset", "validationDataset", validation),
      labelled("precision", "precision", precision), labelled("pool", "execution.pool", pool), numbers),
    grpoPart,
    labelled("more plan fields (JSON, merged in)", "plan", more, "docs/api.md lists every field"),
  ], { build, send: (body) => api.post("/v1/runs", body), done: (run) => { location.hash = `#/runs/${run.id}`; },
    submit: "Start run" });
  main.append(h("h1", {}, "New run"), form, startable);
  if (!datasets.length) form.prepend(h("p", { class: "muted" }, "No dataset yet: ", h("a", { href: "#/datasets" }, "upload one"), " first."));
  await showModel();
}

// The JSON typed into "more plan fields" laid over the form's body, object by object.
function merge(base, extra) {
  if (typeof extra !== "object" || extra === null || Array.isArray(extra)) return extra;
  const out = { ...base };
  for (const [key, value] of Object.entries(extra)) {
    out[key] = typeof value === "object" && value !== null && !Array.isArray(value) && typeof base[key] === "object"
      ? merge(base[key], value) : value;
  }
  return out;
}
