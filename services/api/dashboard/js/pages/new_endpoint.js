// The form that starts an endpoint (POST /v1/endpoints): a base model, or a snapshot of one, served
// until it has been idle for idleTimeout seconds.

import { api } from "../api.js";
import { h } from "../dom.js";
import { apiForm, input, labelled, numberOf, select, setPath } from "../forms.js";

export async function endpointForm() {
  const models = await api.get("/v1/base-models");
  const model = select(models.items.map((m) => [m.id]));
  const snapshot = input({ placeholder: "none: the base model", size: 30 });
  const name = input({ placeholder: "optional", size: 16 });
  const idle = input({ type: "number", min: 0, placeholder: "3600 (0 = never)", size: 10 });
  const gpus = input({ type: "number", min: 1, placeholder: "1", size: 4 });
  return apiForm("endpoint-form", [h("div", { class: "form-grid" },
    labelled("model", "model", model), labelled("snapshot", "snapshot", snapshot), labelled("name", "name", name),
    labelled("idle timeout (s)", "idleTimeout", idle), labelled("GPUs", "gpus", gpus))], {
    build: () => {
      const body = { model: model.value };
      setPath(body, "snapshot", snapshot.value.trim());
      setPath(body, "name", name.value.trim());
      setPath(body, "idleTimeout", numberOf(idle));
      setPath(body, "gpus", numberOf(gpus));
      return body;
    },
    send: (body) => api.post("/v1/endpoints", body),
    done: (endpoint) => { location.hash = `#/endpoints/${endpoint.id}`; },
    submit: "Start endpoint",
  });
}
