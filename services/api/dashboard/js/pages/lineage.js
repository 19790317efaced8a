// #/lineage/RUN: the tree of a run's snapshots and the branches made from them, across runs, from
// the root run down; each snapshot with its run's metrics at its step. Snapshots ticked here start a
// comparison.

import { api, listAll } from "../api.js";
import { badge, clear, errorBox, fill, h, link, num } from "../dom.js";

// The metrics of a run at a step: the last training point and validation point at or before it.
function metricsAt(points, step) {
  let loss = null, validationLoss = null, reward = null;
  for (const p of points) {
    if (p.step > step) break;
    if (p.loss !== null && p.loss !== undefined) loss = p.loss;
    if (p.validationLoss !== null && p.validationLoss !== undefined) validationLoss = p.validationLoss;
    if (p.reward !== null && p.reward !== undefined) reward = p.reward;
  }
  return { loss, validationLoss, reward };
}

async function loadTree(runId) {
  const runs = new Map((await listAll("/v1/runs")).map((r) => [r.id, r]));
  if (!runs.has(runId)) runs.set(runId, await api.get(`/v1/runs/${encodeURIComponent(runId)}`));
  let root = runs.get(runId);
  const seen = new Set();
  while (root.parent && root.parent.run && runs.has(root.parent.run) && !seen.has(root.id)) {
    seen.add(root.id);
    root = runs.get(root.parent.run);
  }
  const children = new Map();  // parent run id -> its branches
  for (const r of runs.values()) {
    if (r.parent && r.parent.run) {
      if (!children.has(r.parent.run)) children.set(r.parent.run, []);
      children.get(r.parent.run).push(r);
    }
  }
  const inTree = [];
  const walk = (r) => { inTree.push(r); (children.get(r.id) || []).forEach(walk); };
  walk(root);
  const details = new Map(await Promise.all(inTree.map(async (r) => {
    const [snapshots, metrics] = await Promise.all([
      api.get(`/v1/snapshots?run=${r.id}&limit=200`), api.get(`/v1/runs/${r.id}/metrics`)]);
    const points = metrics.items.slice().sort((a, b) => a.step - b.step);
    return [r.id, { snapshots: snapshots.items.sort((a, b) => a.step - b.step), points }];
  })));
  return { root, children, details };
}

function runNode(r, tree, focus) {
  const { snapshots, points } = tree.details.get(r.id);
  const branches = tree.children.get(r.id) || [];
  const placed = new Set();
  const snapshotItems = snapshots.map((s) => {
    const m = metricsAt(points, s.step);
    const here = branches.filter((b) => b.parent.snapshot === s.id);
    here.forEach((b) => placed.add(b.id));
    return h("li", { class: "snapshot-node", "data-snapshot": s.id },
      h("label", {}, h("input", { type: "checkbox", class: "pick", value: s.id, disabled: !s.readable.weights }),
        h("code", {}, s.id)),
      h("span", { class: "metrics" }, ` step ${s.step}`, s.final ? " · final" : "",
        m.loss !== null ? ` · loss ${num(m.loss)}` : "",
        m.validationLoss !== null ? ` · val ${num(m.validationLoss)}` : "",
        m.reward !== null ? ` · reward ${num(m.reward)}` : "",
        s.readable.trainingState ? " · weights + trainingState" : " · weights"),
      here.length ? h("ul", {}, here.map((b) => branchItem(b, tree, focus))) : null);
  });
  const orphans = branches.filter((b) => !placed.has(b.id));  // from a snapshot no longer listed
  const last = points.filter((p) => p.loss !== null && p.loss !== undefined).pop();
  return h("div", { class: `run-node${r.id === focus ? " focus" : ""}`, "data-run": r.id },
    h("div", { class: "run-head" }, link(`#/runs/${r.id}`, r.name || r.id), " ", badge(r.status),
      h("span", { class: "muted" }, ` ${r.plan.method} · step ${r.progress.step}/${r.progress.totalSteps || "?"}`,
        last ? ` · loss ${num(last.loss)}` : "")),
    h("ul", { class: "snapshots" }, snapshotItems, orphans.map((b) => branchItem(b, tree, focus))));
}

function branchItem(b, tree, focus) {
  return h("li", { class: "branch", "data-branch": b.id },
    h("span", { class: `restore restore-${b.parent.restore}` }, b.parent.restore === "trainingState"
      ? "⇢ trainingState" : "⇢ weights"),
    runNode(b, tree, focus));
}

export default async function lineagePage(main, [runId]) {
  const message = h("div", { id: "lineage-message" });
  const treeSlot = h("div", { class: "tree", id: "lineage" }, h("p", { class: "muted" }, "loading…"));
  const datasets = await listAll("/v1/datasets");
  const dataset = h("select", { name: "dataset", "aria-label": "dataset" },
    datasets.map((d) => h("option", { value: d.id }, `${d.name} (${d.id}, ${d.rows} rows)`)));
  const compare = h("button", { id: "compare", type: "submit" }, "Compare selected");
  const base = h("input", { type: "checkbox", id: "compare-base", name: "base" });
  const form = h("form", { class: "compare-form", id: "compare-form" }, "Evaluate the ticked snapshots on ", dataset, " ",
    h("label", {}, base, " and the base model"), " ", compare);
  main.append(h("h1", {}, "Lineage of ", h("code", {}, runId)),
    h("p", { class: "muted" }, "Each run lists its snapshots; a branch hangs under the snapshot it started from, " +
      "marked with what it restored."), form, message, treeSlot);

  const tree = await loadTree(runId);
  fill(treeSlot, runNode(tree.root, tree, runId));

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const picked = [...treeSlot.querySelectorAll("input.pick:checked")].map((i) => i.value);
    clear(message);
    try {
      const comparison = await api.post("/v1/comparisons", { snapshots: picked, dataset: dataset.value, base: base.checked });
      location.hash = `#/comparisons/${comparison.id}`;
    } catch (err) { message.append(errorBox(err)); }
  });
}
