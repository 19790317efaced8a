// #/runs: the runs this token sees, filtered by status, workload, name and tags (asked of the API:
// ?name= holds the text, ?tag= every tag named) and by method.

import { api } from "../api.js";
import { badge, errorBox, fill, h, link, num, table, when } from "../dom.js";

const STATUSES = ["QUEUED", "STARTING", "RUNNING", "PAUSED", "SUCCEEDED", "FAILED", "CANCELLED"];
const filters = { status: "", workload: "", method: "", name: "", tags: "" };

export function progressBar(run) {
  const p = run.progress || {};
  const total = p.totalSteps || 0;
  return h("span", { class: "progress" },
    h("progress", { max: total || 1, value: total ? p.step || 0 : 0 }),
    ` ${p.step || 0}${total ? ` / ${total}` : ""}`);
}

function select(name, options) {
  const el = h("select", { name, "aria-label": name },
    h("option", { value: "" }, `any ${name}`), options.map((o) => h("option", { value: o }, o)));
  el.value = filters[name];
  return el;
}

export default async function runsPage(main, _params, life) {
  const status = select("status", STATUSES);
  const method = select("method", ["sft", "grpo"]);
  const workload = h("input", { name: "workload", placeholder: "workload", value: filters.workload, size: 14 });
  const name = h("input", { name: "name", type: "search", placeholder: "name contains", value: filters.name, size: 18,
                            "aria-label": "name" });
  const tags = h("input", { name: "tags", placeholder: "tags (a, b)", value: filters.tags, size: 16, "aria-label": "tags" });
  const body = h("div", { id: "runs-table" });
  main.append(h("h1", {}, "Runs ", h("a", { href: "#/runs/new", class: "button", id: "new-run" }, "New run")),
    h("form", { class: "filters", id: "run-filters" }, name, tags, status, workload, method), body);

  async function refresh() {
    const query = new URLSearchParams({ limit: "200" });
    if (filters.status) query.set("status", filters.status);
    if (filters.workload) query.set("workload", filters.workload);
    if (filters.name) query.set("name", filters.name);
    for (const tag of filters.tags.split(",").map((t) => t.trim()).filter(Boolean)) query.append("tag", tag);
    let page;
    try {
      page = await api.get(`/v1/runs?${query}`);
    } catch (err) {
      fill(body, errorBox(err));
      return;
    }
    const runs = page.items.filter((r) => !filters.method || r.plan.method === filters.method);
    const rows = runs.map((r) => h("tr", { "data-run": r.id },
      h("td", {}, link(`#/runs/${r.id}`, r.name || r.id),
        (r.tags || []).length ? h("span", { class: "muted tags" }, ` ${r.tags.join(", ")}`) : ""),
      h("td", {}, badge(r.status)),
      h("td", {}, r.plan.method),
      h("td", {}, r.plan.model),
      h("td", {}, r.workload),
      h("td", {}, progressBar(r)),
      h("td", {}, num(r.progress.loss)),
      h("td", {}, r.parent ? link(`#/lineage/${r.id}`, `branch (${r.parent.restore})`) : ""),
      h("td", {}, when(r.createdAt))));
    fill(body, rows.length ? table(
      ["run", "status", "method", "model", "workload", "progress", "loss", "parent", "created"], rows, { class: "runs" })
      : h("p", { class: "muted" }, "no runs match"));
  }

  for (const input of [status, method, workload, name, tags]) {
    input.addEventListener("change", () => { filters[input.name] = input.value.trim(); refresh(); });
  }
  document.getElementById("run-filters").addEventListener("submit", (event) => event.preventDefault());
  await refresh();
  life.every(3000, refresh);
}
