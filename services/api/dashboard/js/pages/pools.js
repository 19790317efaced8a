// #/pools: each pool's nodes and devices, who holds each device, and the queue in order with what
// each claim waits on. Another workload's holders and claims show only their kind and size.

import { api } from "../api.js";
import { duration, errorBox, fill, h, resourceLink, table } from "../dom.js";

const PATHS = { run: "runs", evaluation: "evaluations", endpoint: "endpoints" };

function holderName(holder) {
  if (!holder) return h("span", { class: "free" }, "free");
  return h("span", {}, holder.kind, " ", resourceLink(holder.kind, holder.id));
}

// The scheduling of a queued claim this token may see (its waitingText names what holds it back).
async function waitingText(entry) {
  if (!entry.id) return "";
  try {
    const doc = await api.get(`/v1/${PATHS[entry.kind]}/${entry.id}`);
    return (doc.scheduling && doc.scheduling.waitingText) || "";
  } catch { return ""; }
}

// As `training pools get` says it (shared/reasons.py node_service_state).
function serviceState(alive, ready) {
  if (!alive) return "not answering";
  return ready === false ? "alive, still starting" : "alive";
}

async function poolSection(name) {
  const pool = await api.get(`/v1/pools/${encodeURIComponent(name)}`);
  const byDevice = new Map();
  pool.holders.forEach((holder) => (holder.devices || []).forEach((d) => byDevice.set(`${holder.node}/${d}`, holder)));
  const nodes = pool.nodes.map((node) => h("div", { class: "node", "data-node": node.name },
    h("h3", {}, node.name, h("span", { class: "muted" },
      ` ${node.deviceKind} · ${node.freeGpus} of ${node.gpus} free · worker ${serviceState(node.workerAlive, node.workerReady)}` +
      ` · endpoint manager ${serviceState(node.endpointManagerAlive, true)}`)),
    h("div", { class: "devices" }, node.devices.map((d) => {
      const holder = byDevice.get(`${node.name}/${d}`) || (node.freeDevices.includes(d) ? null : { kind: "held" });
      return h("div", { class: `device${holder ? " held" : ""}`, "data-device": d }, h("code", {}, d), h("br"),
        holder && holder.kind === "held" ? "held" : holderName(holder));
    }))));
  const holders = pool.holders.map((x) => h("tr", { "data-holder": x.id || "" },
    h("td", {}, x.kind), h("td", {}, resourceLink(x.kind, x.id)), h("td", {}, x.gpus), h("td", {}, x.workload || "–"),
    h("td", {}, x.node ? `${x.node}: ${(x.devices || []).join(", ")}` : "–"), h("td", {}, x.model || "–"),
    h("td", {}, x.idleSeconds === null || x.idleSeconds === undefined ? "–" : duration(x.idleSeconds))));
  const texts = await Promise.all(pool.queue.map(waitingText));
  const queue = pool.queue.map((q, i) => h("tr", { "data-queued": q.id || "" },
    h("td", {}, q.position), h("td", {}, q.kind), h("td", {}, resourceLink(q.kind, q.id)), h("td", {}, q.gpus),
    h("td", {}, q.workload || "–"), h("td", {}, h("code", {}, q.reason)),
    h("td", {}, q.quota ? `${q.quota.workload} holds ${q.quota.held} of ${q.quota.gpus}` : ""),
    h("td", { class: "waiting" }, texts[i])));
  return h("section", { class: "pool", "data-pool": pool.name },
    h("h2", {}, `pool ${pool.name}`, h("span", { class: "muted" },
      ` ${pool.freeGpus} of ${pool.gpus} GPU(s) free · ${pool.heldGpus} held · ${pool.waiting} waiting`)),
    h("div", { class: "nodes" }, nodes),
    pool.quotas.length ? h("p", {}, "quotas: ", pool.quotas.map((q) => `${q.workload} ${q.held}/${q.gpus}`).join(", ")) : null,
    h("h3", {}, "Holders"),
    holders.length ? table(["kind", "id", "GPUs", "workload", "devices", "model", "idle"], holders, { class: "holders" })
      : h("p", { class: "muted" }, "nothing holds devices"),
    h("h3", {}, "Queue"),
    queue.length ? table(["#", "kind", "id", "GPUs", "workload", "reason", "quota", "waiting on"], queue, { class: "queue" })
      : h("p", { class: "muted" }, "nothing waits"));
}

export default async function poolsPage(main, _params, life) {
  const body = h("div", { id: "pools" });
  main.append(h("h1", {}, "Pools"), body);
  async function refresh() {
    try {
      const pools = (await api.get("/v1/pools")).items;
      const sections = await Promise.all(pools.map((p) => poolSection(p.name)));
      fill(body, ...sections);
    } catch (err) { fill(body, errorBox(err)); }
  }
  await refresh();
  life.every(3000, refresh);
}
