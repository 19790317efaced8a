// Tables of texts and their scores: a grpo run's rollout samples (GET /v1/runs/ID/samples), one step
// at a time, and an evaluation's per-row results (GET /v1/evaluations/ID/rows, JSONL).

import { api } from "./api.js";
import { errorBox, fill, h, num, table } from "./dom.js";

const text = (value) => h("div", { class: "sample-text" }, value);

// One step's sample: a row per completion, its group's prompt on the group's first row.
function stepTable(sample) {
  const keys = [...new Set(sample.groups.flatMap((g) => g.completions.flatMap((c) => Object.keys(c.scores || {}))))];
  const rows = sample.groups.flatMap((group, g) => group.completions.map((c, i) => h("tr",
    { "data-group": g + 1, "data-completion": i + 1 },
    i === 0 ? h("td", { rowspan: group.completions.length, class: "sample-prompt" },
      text(group.prompt + (group.promptTruncated ? " …" : ""))) : null,
    h("td", {}, i + 1),
    h("td", { class: "sample-completion" }, text(c.text + (c.truncated ? " …" : ""))),
    h("td", { "data-reward": c.reward ?? "" }, num(c.reward)),
    h("td", { "data-advantage": c.advantage ?? "" }, num(c.advantage)),
    keys.map((k) => h("td", { "data-score": k }, num((c.scores || {})[k]))))));
  return h("div", {},
    h("p", { class: "muted", id: "samples-caption" }, `step ${sample.step}: ${sample.groups.length} of ` +
      `${sample.groupsInStep} prompt group(s), ${sample.completionsInStep} completion(s) in the step; ` +
      "texts past 1,000 characters end in …"),
    table(["prompt", "#", "completion", "reward", "advantage", ...keys], rows, { id: "samples-table", class: "samples" }));
}

// The run page's samples section: a step selector (the latest step until the user picks one).
export function samplesSection(runId) {
  const body = h("div", { id: "samples" }, h("p", { class: "muted" }, "no samples yet: each step adds one"));
  const step = h("input", { type: "number", min: 1, id: "sample-step", "aria-label": "step" });
  let picked = false;
  const path = `/v1/runs/${encodeURIComponent(runId)}/samples`;

  async function show(n) {
    try {
      const page = await api.get(n ? `${path}?step=${n}` : `${path}?limit=1`);
      if (!page.items.length) { fill(body, h("p", { class: "muted" }, "no samples yet: each step adds one")); return; }
      step.value = page.items[0].step;
      fill(body, stepTable(page.items[0]));
    } catch (err) { fill(body, errorBox(err)); }
  }
  const go = (delta) => { picked = true; show(Math.max(1, Number(step.value || 1) + delta)); };
  step.addEventListener("change", () => { picked = true; show(Number(step.value)); });
  const el = h("section", { id: "samples-section" }, h("h2", {}, "Rollout samples"),
    h("div", { class: "actions" }, h("button", { type: "button", id: "sample-prev", onclick: () => go(-1) }, "◀"),
      h("label", {}, "step ", step), h("button", { type: "button", id: "sample-next", onclick: () => go(1) }, "▶"),
      h("button", { type: "button", id: "sample-latest", onclick: () => { picked = false; show(null); } }, "latest")),
    body);
  // while the run trains, the latest step follows unless the user picked one
  return { el, refresh: () => (picked ? null : show(null)) };
}

// An evaluation's per-row results, once it has them (the API answers 409 before it SUCCEEDED).
export async function rowsTable(evaluationId, most = 200) {
  const jsonl = await api.text(`/v1/evaluations/${encodeURIComponent(evaluationId)}/rows`);
  const rows = jsonl.split("\n").filter((line) => line.trim()).map((line) => JSON.parse(line));
  const shown = rows.slice(0, most);
  const rewards = [...new Set(shown.flatMap((r) => Object.keys(r.rewards || {})))];
  const has = (key) => shown.some((r) => r[key] !== null && r[key] !== undefined);
  const columns = [["row", (r) => r.row], ["prompt", (r) => text(promptText(r.prompt))],
    ["completion", (r) => (r.completion == null ? "–" : text(r.completion))], ["reference", (r) => text(r.reference ?? "–")],
    ...["loss", "exactMatch", "judge"].filter(has).map((k) => [k, (r) => num(r[k])]),
    ...rewards.map((k) => [`reward ${k}`, (r) => num((r.rewards || {})[k])])];
  return h("div", {},
    h("p", { class: "muted", id: "rows-caption" }, `${shown.length} of ${rows.length} row(s)`),
    table(columns.map(([name]) => name), shown.map((r) => h("tr", { "data-row": r.row },
      columns.map(([name, cell]) => h("td", { "data-column": name }, cell(r))))), { id: "rows-table", class: "samples" }));
}

// A prompt as the rows hold it: text, or chat messages shown one `role: content` line each.
function promptText(prompt) {
  if (!Array.isArray(prompt)) return prompt ?? "–";
  return prompt.map((m) => `${m.role}: ${Array.isArray(m.content)
    ? m.content.map((p) => (p.type === "text" ? p.text : `[${p.type}]`)).join(" ") : m.content}`).join("\n");
}
