// #/comparisons: the comparisons this token sees.

import { api } from "../api.js";
import { badge, errorBox, fill, h, link, table, when } from "../dom.js";

export default async function comparisonsPage(main, _params, life) {
  const body = h("div", { id: "comparisons" });
  main.append(h("h1", {}, "Comparisons"),
    h("p", { class: "muted" }, "Start one from a run's lineage: tick its snapshots, pick a dataset."), body);
  async function refresh() {
    try {
      const page = await api.get("/v1/comparisons?limit=200");
      const rows = page.items.map((c) => h("tr", { "data-comparison": c.id },
        h("td", {}, link(`#/comparisons/${c.id}`, c.id)), h("td", {}, badge(c.status)), h("td", {}, c.model),
        h("td", {}, c.rows.length), h("td", {}, c.dataset), h("td", {}, when(c.createdAt))));
      fill(body, rows.length ? table(["comparison", "status", "model", "snapshots", "dataset", "created"], rows)
        : h("p", { class: "muted" }, "no comparisons yet"));
    } catch (err) { fill(body, errorBox(err)); }
  }
  await refresh();
  life.every(4000, refresh);
}
