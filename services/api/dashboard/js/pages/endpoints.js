// #/endpoints: the endpoints this token sees, with phase, stop time and last request; a form that starts one.

import { api } from "../api.js";
import { badge, errorBox, fill, h, link, table, when } from "../dom.js";
import { endpointForm } from "./new_endpoint.js";

export default async function endpointsPage(main, _params, life) {
  const body = h("div", { id: "endpoints" });
  main.append(h("h1", {}, "Endpoints"), h("details", { class: "create", id: "new-endpoint" },
    h("summary", {}, "New endpoint…"), await endpointForm()), body);
  async function refresh() {
    try {
      const page = await api.get("/v1/endpoints?limit=200");
      const rows = page.items.map((e) => h("tr", { "data-endpoint": e.id },
        h("td", {}, link(`#/endpoints/${e.id}`, e.name || e.id)), h("td", {}, badge(e.phase)), h("td", {}, e.model),
        h("td", {}, e.snapshot ? h("code", {}, e.snapshot) : "base"), h("td", {}, e.workload),
        h("td", {}, e.stopsAt ? when(e.stopsAt) : e.phase === "READY" ? "never (no idle timeout)" : "–"),
        h("td", {}, when(e.lastRequestAt))));
      fill(body, rows.length ? table(["endpoint", "phase", "model", "snapshot", "workload", "stops", "last request"],
        rows) : h("p", { class: "muted" }, "no endpoints"));
    } catch (err) { fill(body, errorBox(err)); }
  }
  await refresh();
  life.every(3000, refresh);
}
