// #/endpoints/ID: one endpoint (phase, stop time, last request), its serving log and events, and a
// chat playground whose requests go through the trainer's proxy, streamed.

import { api, follower, streamChat } from "../api.js";
import { badge, errorBox, field, fill, h, when } from "../dom.js";

function playground(endpoint) {
  const transcript = h("div", { class: "transcript", id: "transcript" });
  const prompt = h("textarea", { id: "prompt", rows: 3, placeholder: "Say something to the model", required: true });
  const maxTokens = h("input", { id: "max-tokens", type: "number", min: 1, max: 4096, value: 32 });
  const temperature = h("input", { id: "temperature", type: "number", min: 0, max: 2, step: 0.1, value: 0 });
  const send = h("button", { type: "submit", id: "send" }, "Send");
  const status = h("p", { class: "muted", id: "playground-status" });
  const messages = [];
  const form = h("form", { class: "playground", id: "playground" },
    h("h2", {}, "Playground"),
    h("p", { class: "muted" }, `POST /v1/chat/completions with model ${endpoint.name || endpoint.id}, streamed through the trainer`),
    transcript, prompt,
    h("div", { class: "row" }, h("label", {}, "max tokens ", maxTokens), h("label", {}, "temperature ", temperature), send),
    status);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = prompt.value.trim();
    if (!text) return;
    messages.push({ role: "user", content: text });
    transcript.append(h("div", { class: "msg user" }, h("b", {}, "you: "), text));
    const answer = h("span", { class: "answer" });
    const bubble = h("div", { class: "msg assistant", "data-state": "streaming" }, h("b", {}, "model: "), answer);
    transcript.append(bubble);
    prompt.value = "";
    send.disabled = true;
    status.textContent = "streaming…";
    const started = performance.now();
    try {
      const whole = await streamChat({ model: endpoint.name || endpoint.id, messages,
        max_tokens: Number(maxTokens.value), temperature: Number(temperature.value) },
      (_delta, sofar) => { answer.textContent = sofar; });
      messages.push({ role: "assistant", content: whole });
      bubble.dataset.state = "done";
      status.textContent = `answered in ${((performance.now() - started) / 1000).toFixed(2)}s`;
    } catch (err) {
      bubble.dataset.state = "failed";
      messages.pop();
      bubble.append(errorBox(err));
      status.textContent = "";
    } finally {
      send.disabled = false;
    }
  });
  return form;
}

export default async function endpointPage(main, [endpointId], life) {
  let endpoint = await api.get(`/v1/endpoints/${encodeURIComponent(endpointId)}`);
  const id = endpoint.id;
  const summary = h("section", { class: "summary", id: "endpoint-summary" });
  const message = h("div");
  const actions = h("div", { class: "actions" });
  const logs = h("pre", { class: "logs", id: "serving-log" });
  const events = h("ol", { class: "events", id: "endpoint-events" });
  const nextEvents = follower(`/v1/endpoints/${id}/events`);
  main.append(h("h1", {}, "Endpoint ", h("code", {}, endpoint.name || id), " ", h("span", { id: "endpoint-phase" })),
    summary, actions, message, playground(endpoint),
    h("div", { class: "columns" },
      h("section", {}, h("h2", {}, "Serving log"), logs),
      h("section", {}, h("h2", {}, "Events"), events)));

  function draw() {
    fill(document.getElementById("endpoint-phase"), badge(endpoint.phase));
    const s = endpoint.scheduling || {};
    fill(summary,
      field("id", h("code", {}, id)), field("model", endpoint.model),
      field("snapshot", endpoint.snapshot || "base model"),
      field("devices", s.node ? `${s.node}: ${(s.devices || []).join(", ")}` : s.waitingText || "–"),
      field("ready", when(endpoint.readyAt)), field("last request", when(endpoint.lastRequestAt)),
      field("stops", endpoint.stopsAt ? when(endpoint.stopsAt)
        : endpoint.stoppedAt ? h("span", {}, "stopped ", when(endpoint.stoppedAt))
          : endpoint.idleTimeout === 0 ? "never (no idle timeout)" : "–"),
      field("idle timeout", endpoint.idleTimeout ? `${endpoint.idleTimeout}s` : "none"),
      field("process", endpoint.process ? `${endpoint.process.backend} pid ${endpoint.process.pid} port ${endpoint.process.port}` : "–"),
      endpoint.detail ? field("detail", endpoint.detail) : null);
    fill(actions, h("button", { id: "stop", disabled: ["TERMINATED", "FAILED"].includes(endpoint.phase) || endpoint.stopRequested,
        onclick: async () => {
          try { endpoint = await api.delete(`/v1/endpoints/${id}`); draw(); } catch (err) { message.append(errorBox(err)); }
        } }, "Stop"));
  }

  async function refresh() {
    endpoint = await api.get(`/v1/endpoints/${id}`);
    draw();
    try {
      logs.textContent = (await api.get(`/v1/endpoints/${id}/logs?lines=200`)).lines.join("\n");
    } catch (err) { logs.textContent = err.message; }
    for (const e of await nextEvents()) {
      events.append(h("li", { class: `level-${e.level}` }, h("time", { datetime: e.time }, e.time.slice(11, 19)), " ", e.message));
    }
  }
  draw();
  await refresh();
  life.every(3000, refresh);
}
