// Forms that call the REST API: labelled inputs named by the plan or body field they set, and the
// API's errors shown next to the field they name (details.field, or details.fields for a plan's
// fields; a dataset's faults by line under its file), the rest above the submit button.

import { h } from "./dom.js";

// A labelled input whose errors show beside it; `field` is the API's name for it ("hyperparameters.maxSteps").
export function labelled(label, field, input, hint = "") {
  input.dataset.field = field;
  if (!input.name) input.name = field;
  return h("label", { class: "form-field", "data-for": field },
    h("span", { class: "label" }, label), input,
    hint ? h("span", { class: "muted hint" }, hint) : null,
    h("span", { class: "field-error error", "data-error-for": field }));
}

export function input(attrs = {}) { return h("input", attrs); }

export function select(options, attrs = {}) {
  return h("select", attrs, options.map(([value, text]) => h("option", { value }, text ?? value)));
}

export function clearErrors(form) {
  form.querySelectorAll(".field-error, .form-error").forEach((el) => { el.textContent = ""; });
  form.querySelectorAll(".invalid").forEach((el) => el.classList.remove("invalid"));
}

// The API's error, each part next to the field it names; what names no field of this form goes
// to the form's own error line. Returns the fields marked.
export function showErrors(form, err) {
  clearErrors(form);
  const details = err.details || {};
  const byField = {};
  if (details.field) byField[details.field] = [err.message];
  for (const [path, problems] of Object.entries(details.fields || {})) byField[path] = problems;
  if (details.faults && form.querySelector("[data-error-for='file']")) byField.file = [err.message];
  const marked = [];
  let unplaced = Object.keys(byField).length ? [] : [err.message];
  for (const [path, problems] of Object.entries(byField)) {
    const slot = slotFor(form, path);
    if (!slot) { unplaced.push(`${path}: ${problems.join("; ")}`); continue; }
    const text = problems.length === 1 && problems[0] === err.message ? err.message : problems.join("; ");
    slot.textContent = slot.textContent ? `${slot.textContent}; ${text}` : text;
    slot.closest(".form-field").querySelector("[data-field]")?.classList.add("invalid");
    marked.push(path);
  }
  if (unplaced.length) form.querySelector(".form-error").textContent = unplaced.join(" · ");
  return marked;
}

// The slot of the field named, or of the nearest field above it ("grpo.rewards.0.function" -> "grpo").
function slotFor(form, path) {
  const parts = path.split(".");
  while (parts.length) {
    const slot = form.querySelector(`[data-error-for='${CSS.escape(parts.join("."))}']`);
    if (slot) return slot;
    parts.pop();
  }
  return null;
}

// A form that sends what build() returns through send(), then calls done(answer); errors are placed.
export function apiForm(id, children, { build, send, done, submit = "Create" }) {
  const form = h("form", { id, class: "api-form", novalidate: true }, children,
    h("p", { class: "form-error error" }), h("button", { type: "submit" }, submit));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      done(await send(build()));
    } catch (err) {
      showErrors(form, err);
    } finally { button.disabled = false; }
  });
  return form;
}

// A number typed into an input, or undefined when it is empty (left to the API's default).
export function numberOf(el) {
  const text = el.value.trim();
  return text === "" ? undefined : Number(text);
}

// Set a dotted path in an object ("hyperparameters.maxSteps"), leaving undefined values out.
export function setPath(target, path, value) {
  if (value === undefined || value === "") return target;
  const keys = path.split(".");
  let node = target;
  for (const key of keys.slice(0, -1)) node = node[key] = node[key] || {};
  node[keys[keys.length - 1]] = value;
  return target;
}
