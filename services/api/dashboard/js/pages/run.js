// #/runs/ID: one run followed live: its progress, charts of its metrics, its events, its snapshots,
// its plan (plan_panel.js), what each snapshot can start (snapshot_actions.js) with the evaluations
// started so, a grpo run's rollout samples, and the buttons that pause, resume, cancel and branch it.

import { api, follower } from "../api.js";
import { chart, seriesOf } from "../plot.js";
import { badge, bytes, clear, errorBox, field, fill, h, link, num, table, when } from "../dom.js";
import { samplesSection } from "../samples.js";
import { overlayControl } from "./overlay.js";
import { planPanel } from "./plan_panel.js";
import { progressBar } from "./runs.js";
import { evaluationsList, snapshotActions } from "./snapshot_actions.js";

const TERMINAL = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);

// Each chart: its title, options, and the series it draws from the run's metric points.
const CHARTS = [
  ["loss", {}, (pts) => [seriesOf(pts, "loss", (p) => p.loss), seriesOf(pts, "validation", (p) => p.validationLoss)]],
  ["learning rate", {}, (pts) => [seriesOf(pts, "learning rate", (p) => p.learningRate)]],
  ["grad norm", {}, (pts) => [seriesOf(pts, "grad norm", (p) => p.gradNorm)]],
  ["tokens/s", {}, (pts) => [seriesOf(pts, "tokens/s", (p) => p.tokensPerSecond)]],
  ["validation loss", {}, (pts) => [seriesOf(pts, "validation loss", (p) => p.validationLoss)]],
];
const GRPO_CHARTS = [
  // the weighted total on a chart of its own; each reward on its own scale (rewardChart)
  ["reward (weighted total)", {}, (pts) => [seriesOf(pts, "weighted total", (p) => p.reward)]],
  ["KL", {}, (pts) => [seriesOf(pts, "kl", (p) => p.kl)]],
  ["groups with equal rewards", {}, (pts) => [seriesOf(pts, "share", (p) => p.equalRewardGroupShare)]],
  ["completion length", { unit: "tokens" }, (pts) => [seriesOf(pts, "completion length", (p) => p.completionLength)]],
  ["step time split", { unit: "s" }, (pts) => [
    seriesOf(pts, "generation", (p) => p.generationSeconds), seriesOf(pts, "hand-off", (p) => p.handoffSeconds),
    seriesOf(pts, "reward", (p) => p.rewardSeconds), seriesOf(pts, "update", (p) => p.updateSeconds),
    seriesOf(pts, "step", (p) => p.stepSeconds)]],
  ["hand-off bytes", { yFormat: bytes }, (pts) => [seriesOf(pts, "hand-off bytes", (p) => p.handoffBytes)]],
];

function rewardKeys(points) {
  const keys = new Set();
  points.forEach((p) => Object.keys(p.rewards || {}).forEach((k) => keys.add(k)));
  return [...keys];
}

// One reward's mean per step, on a chart of its own (a length reward in the hundreds would flatten an
// exact match's 0..1 on a shared axis).
function rewardChart(key) {
  return { ...chart(`reward: ${key}`), rewardKey: key,
    series: (pts) => [seriesOf(pts, key, (p) => p.rewards && p.rewards[key] && p.rewards[key].mean)] };
}

// The plan of a branch of this run from one of its snapshots: the same plan, restoring the snapshot.
export function branchPlan(plan, snapshot, what, maxSteps) {
  const body = {};
  for (const [key, value] of Object.entries(plan)) {
    if (value !== null && key !== "restore" && key !== "name") body[key] = value;
  }
  body.restore = { snapshot, what };
  body.hyperparameters = { ...plan.hyperparameters, maxSteps };
  return body;
}

function branchForm(run, snapshots, onError) {
  const choices = snapshots.filter((s) => s.readable && s.readable.weights);
  const snapshot = h("select", { name: "snapshot", "aria-label": "snapshot" },
    choices.map((s) => h("option", { value: s.id }, `${s.id} (step ${s.step})`)));
  const what = h("select", { name: "what", "aria-label": "restore" },
    h("option", { value: "weights" }, "weights"), h("option", { value: "trainingState" }, "trainingState"));
  const steps = h("input", { name: "maxSteps", type: "number", min: 1, value: run.plan.hyperparameters.maxSteps || 10 });
  const form = h("form", { class: "branch-form", id: "branch-form" },
    h("label", {}, "from ", snapshot), h("label", {}, "restore ", what),
    // maxSteps is the step the branch ends at: a trainingState branch counts on from its snapshot's step
    h("label", { title: "the step it ends at: a trainingState branch continues its snapshot's step count" },
      "ends at step ", steps),
    h("button", { type: "submit" }, "Start branch"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const child = await api.post("/v1/runs", branchPlan(run.plan, snapshot.value, what.value, Number(steps.value)));
      location.hash = `#/runs/${child.id}`;
    } catch (err) { onError(err); }
  });
  return form;
}

// The run's process log (GET /v1/runs/ID/process-log: its libraries' log lines, events and, on
// failure, the traceback), shown on demand and downloadable as a file.
function processLogSection(runId, onError) {
  const text = h("pre", { class: "logs", id: "process-log" });
  const load = async () => {
    try {
      const log = await api.get(`/v1/runs/${encodeURIComponent(runId)}/process-log`);
      fill(text, log);
      return log;
    } catch (err) { fill(text, errorBox(err)); return null; }
  };
  const download = async () => {
    const log = await load();
    if (log === null) return;
    const a = h("a", { href: URL.createObjectURL(new Blob([log], { type: "text/plain" })),
      download: `${runId}-process.log` });
    document.body.append(a);
    a.click();
    a.remove();
  };
  return h("section", { id: "process-log-section" }, h("h2", {}, "Process log"),
    h("div", { class: "actions" },
      h("button", { id: "show-process-log", onclick: () => load().catch(onError) }, "Show"),
      h("button", { id: "download-process-log", onclick: () => download().catch(onError) }, "Download")),
    text);
}

export default async function runPage(main, [runId], life) {
  let run = await api.get(`/v1/runs/${encodeURIComponent(runId)}`);
  const charts = [...CHARTS, ...(run.plan.method === "grpo" ? GRPO_CHARTS : [])].map(
    ([title, options, series]) => ({ ...chart(title, options), series }));
  const points = [];
  const nextMetrics = follower(`/v1/runs/${runId}/metrics`);
  const nextEvents = follower(`/v1/runs/${runId}/events`);

  const summary = h("section", { class: "summary", id: "run-summary" });
  const actions = h("div", { class: "actions", id: "run-actions" });
  const message = h("div", { id: "run-message" });
  const events = h("ol", { class: "events", id: "events" });
  const snapshots = h("div", { id: "snapshots" });
  const branchSlot = h("div", { id: "branch-slot" });
  const planSlot = h("div", { id: "plan-slot" });
  const actionSlot = h("div", { id: "snapshot-action-slot" });
  const evaluations = evaluationsList(runId);
  const overlay = overlayControl(run, () => redraw());
  const chartsSection = h("section", { class: "charts", id: "charts" }, charts.map((c) => c.el));
  const noPoints = h("p", { class: "muted", id: "charts-empty" }, "no metrics yet: each step adds a point");
  const samples = run.plan.method === "grpo" ? samplesSection(run.id) : null;
  main.append(
    h("h1", {}, "Run ", h("code", {}, run.id), " ", h("span", { id: "run-status" })),
    summary, planSlot, actions, message, branchSlot,
    overlay.el, noPoints, chartsSection,
    samples ? samples.el : null,
    h("div", { class: "columns" },
      h("section", {}, h("h2", {}, "Events"), events),
      h("section", {}, h("h2", {}, "Snapshots"), snapshots, actionSlot,
        h("h2", {}, "Evaluations"), evaluations.el)),
    processLogSection(runId, (err) => fill(message, errorBox(err))));

  const showError = (err) => fill(message, errorBox(err));
  async function act(label, call) {
    clear(message);
    try { run = await call(); drawRun(); } catch (err) { showError(err); }
  }
  let snapshotDocs = [];

  // memory per device: the estimate beside the measured peak (each rank's when several)
  function memoryText(m) {
    if (!m || (m.estimateGiB == null && m.peakGiB == null)) return "–";
    const ranks = (m.ranks || []).length > 1
      ? ` (${m.ranks.map((r) => `rank ${r.rank} ${num(r.peakGiB, 3)}`).join(", ")})` : "";
    const over = m.peakGiB != null && m.estimateGiB != null && m.peakGiB > m.estimateGiB ? " — above the estimate" : "";
    return `estimate ${num(m.estimateGiB, 3)} GiB · peak ${num(m.peakGiB, 3)} GiB${ranks}${over}`;
  }

  function drawRun() {
    fill(document.getElementById("run-status"), badge(run.status));
    const p = run.progress, s = run.scheduling || {};
    fill(summary,
      field("progress", progressBar(run)),
      field("method", `${run.plan.method} on ${run.plan.model}`),
      field("engine", `${run.engine} · ${run.gpus} GPU(s) in ${run.pool}`),
      field("loss", `${num(p.loss)} (first ${num(p.firstLoss)})`),
      run.plan.method === "grpo" ? field("reward", num(p.reward)) : field("validation loss", num(p.validationLoss)),
      field("tokens/s", num(p.tokensPerSecond)),
      field("eta", p.etaSeconds == null ? "–" : `${Math.round(p.etaSeconds)}s`),
      field("devices", s.node ? `${s.node}: ${(s.devices || []).join(", ")}` : s.waitingText || "–"),
      field("memory", memoryText(run.memory)),
      field("parent", run.parent ? h("span", {}, link(`#/runs/${run.parent.run}`, run.parent.run || "imported"),
        ` @ ${run.parent.snapshot} (${run.parent.restore})`) : "none"),
      field("workload", run.workload),
      field("created", when(run.createdAt)),
      run.detail ? field("detail", run.detail) : null);
    const live = !TERMINAL.has(run.status);
    fill(actions,
      h("button", { id: "pause", disabled: !["STARTING", "RUNNING"].includes(run.status) || run.pauseRequested,
        onclick: () => act("pause", () => api.post(`/v1/runs/${runId}/pause`)) }, "Pause"),
      h("button", { id: "resume", disabled: run.status !== "PAUSED",
        onclick: () => act("resume", () => api.post(`/v1/runs/${runId}/resume`)) }, "Resume"),
      h("button", { id: "cancel", disabled: !live || run.cancelRequested,
        onclick: () => act("cancel", () => api.delete(`/v1/runs/${runId}`)) }, "Cancel"),
      h("button", { id: "branch", disabled: !snapshotDocs.length, onclick: () => openBranch() }, "Branch…"),
      link(`#/lineage/${run.id}`, "Lineage"));
  }

  function openBranch(snapshotId) {
    fill(branchSlot, branchForm(run, snapshotDocs, showError));
    if (snapshotId) branchSlot.querySelector("select[name=snapshot]").value = snapshotId;
    branchSlot.scrollIntoView({ block: "nearest" });
  }
  const snapshotHooks = { slot: actionSlot, branch: openBranch, showError, evaluated: () => evaluations.refresh() };

  async function drawSnapshots() {
    if (snapshotDocs.length === run.snapshots.length && snapshots.firstChild) return;
    snapshotDocs = (await api.get(`/v1/snapshots?run=${runId}&limit=200`)).items.sort((a, b) => a.step - b.step);
    const rows = snapshotDocs.map((s) => h("tr", { "data-snapshot": s.id },
      h("td", {}, h("code", {}, s.id)), h("td", {}, s.step), h("td", {}, s.final ? "final" : ""),
      h("td", {}, s.readable.weights ? "weights" : "", s.readable.trainingState ? " + trainingState" : ""),
      h("td", {}, when(s.createdAt)), snapshotActions(run, s, snapshotHooks)));
    fill(snapshots, rows.length ? table(["snapshot", "step", "", "readable", "written", ""], rows)
      : h("p", { class: "muted" }, "none yet"));
    drawRun();
  }

  // its own curves, then those of each run overlaid (named "RUN · series")
  function redraw() {
    charts.forEach((c) => c.update([...c.series(points), ...overlay.list().flatMap(
      (o) => c.series(o.points).map((s) => ({ ...s, name: `${o.name} · ${s.name}` })))]));
  }

  async function follow() {
    const fresh = await nextMetrics();
    if (fresh.length) {
      points.push(...fresh);
      for (const key of rewardKeys(points)) {
        if (!charts.some((c) => c.rewardKey === key)) { const c = rewardChart(key); charts.push(c); chartsSection.append(c.el); }
      }
      redraw();
      noPoints.hidden = charts.some((c) => !c.el.hidden);
      if (samples) await samples.refresh();
    }
    const newEvents = await nextEvents();
    const atBottom = events.scrollTop + events.clientHeight >= events.scrollHeight - 4;
    for (const e of newEvents) {
      events.append(h("li", { class: `level-${e.level}` }, h("time", { datetime: e.time }, e.time.slice(11, 19)),
        " ", e.message));
    }
    if (newEvents.length && atBottom) events.scrollTop = events.scrollHeight;
  }

  drawRun();
  planPanel(run).then((panel) => fill(planSlot, panel), showError);
  charts.forEach((c) => c.update([]));
  await follow();
  await drawSnapshots();
  await evaluations.refresh();
  overlay.load().catch(showError);
  life.every(4000, evaluations.refresh);
  let endedPolls = 0;
  life.every(2000, async () => {
    if (TERMINAL.has(run.status) && ++endedPolls > 5) return;  // the last events come after it ends
    run = await api.get(`/v1/runs/${runId}`);
    drawRun();
    await follow();
    await drawSnapshots();
  });
}
