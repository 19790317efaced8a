// Building elements and formatting values.

// h("a", {href: "#/x", class: "c"}, "text", child...): an element; `on*` attributes become listeners.
export function h(tag, attrs = {}, ...children) {
  const el = tag === "svg" || attrs.svg ? document.createElementNS("http://www.w3.org/2000/svg", tag)
    : document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "svg" || value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}


export function clear(el) { while (el.firstChild) el.firstChild.remove(); return el; }

export function num(value, digits = 4) {
  if (value === null || value === undefined) return "–";
  if (typeof value !== "number") return String(value);
  if (Number.isInteger(value)) return value.toLocaleString("en");
  const abs = Math.abs(value);
  if (abs !== 0 && (abs < 1e-3 || abs >= 1e5)) return value.toExponential(2);
  return Number(value.toPrecision(digits)).toString();
}

export function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

export function when(iso) {
  if (!iso) return "–";
  const seconds = (Date.now() - Date.parse(iso)) / 1000;
  const ago = seconds < 0 ? "in " + duration(-seconds) : duration(seconds) + " ago";
  return h("time", { datetime: iso, title: iso }, ago);
}

export function duration(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  seconds = Math.round(seconds);
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ${seconds % 60}s`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h ${Math.floor((seconds % 3600) / 60)}m`;
  return `${Math.floor(seconds / 86400)}d ${Math.floor((seconds % 86400) / 3600)}h`;
}

export function badge(state) { return h("span", { class: `badge state-${String(state).toLowerCase()}` }, state); }

export function link(href, text) { return h("a", { href }, text); }

// The page of a resource, by the kind its id names.
export function resourceLink(kind, id) {
  if (!id) return h("span", { class: "muted" }, `${kind} of another workload`);
  const route = { run: "runs", endpoint: "endpoints", evaluation: "evaluations" }[kind];
  return route ? link(`#/${route}/${id}`, id) : h("code", {}, id);
}

export function table(columns, rows, attrs = {}) {
  return h("table", attrs,
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", {}, c)))),
    h("tbody", {}, rows));
}

export function errorBox(err) { return h("p", { class: "error" }, err.message || String(err)); }

export function field(label, ...value) { return h("div", { class: "field" }, h("span", { class: "label" }, label), h("span", {}, ...value)); }

// Replace an element's children (null, undefined and false ones left out, as h() leaves them).
export function fill(el, ...children) {
  clear(el);
  for (const child of children.flat()) if (child !== null && child !== undefined && child !== false) el.append(child);
  return el;
}
