// The REST API, called with the user's bearer token (kept in this tab's session storage).

const TOKEN_KEY = "trainer.token";

export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code;
    this.details = error.details || {};
  }
}

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

let onUnauthenticated = () => {};
export function whenUnauthenticated(callback) { onUnauthenticated = callback; }

function headers(extra = {}) {
  return { Authorization: `Bearer ${token.get() || ""}`, ...extra };
}

async function send(method, path, body, { raw = false } = {}) {
  const init = { method, headers: headers() };
  if (body instanceof FormData) {
    init.body = body;  // multipart: the browser writes its Content-Type with the boundary
  } else if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  const text = await resp.text();
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch { parsed = text; }
  if (!resp.ok) {
    if (resp.status === 401) onUnauthenticated();
    throw new ApiError(resp.status, parsed);
  }
  return raw ? text : parsed;
}

export const api = {
  get: (path) => send("GET", path),
  text: (path) => send("GET", path, undefined, { raw: true }),  // an answer that is not JSON (JSONL)
  post: (path, body) => send("POST", path, body),
  delete: (path) => send("DELETE", path),
  upload: (path, formData) => send("POST", path, formData),
};

// A file the API serves (an adapter archive, ...), fetched with the token and handed to the browser
// as a download named `name`.
export async function download(path, name) {
  const resp = await fetch(path, { headers: headers() });
  if (!resp.ok) {
    let parsed = null;
    try { parsed = await resp.json(); } catch { /* not JSON */ }
    if (resp.status === 401) onUnauthenticated();
    throw new ApiError(resp.status, parsed);
  }
  const url = URL.createObjectURL(await resp.blob());
  const a = document.createElement("a");
  a.href = url; a.download = name;
  document.body.append(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

// Every item of a paged list ({items, nextCursor}), up to `most` items.
export async function listAll(path, most = 1000) {
  const items = [];
  let cursor = null;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const page = await api.get(`${path}${sep}limit=200${cursor ? `&after=${encodeURIComponent(cursor)}` : ""}`);
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor && items.length < most);
  return items;
}

// A log ({items, next}) followed from where it was last read: each call returns the new entries.
export function follower(path) {
  let next = 0;
  return async () => {
    const page = await api.get(`${path}?after=${next}`);
    next = page.next;
    return page.items;
  };
}

// POST /v1/chat/completions with stream: true through the trainer's proxy; onDelta gets each piece
// of the answer as it arrives. Resolves with the whole text.
export async function streamChat(body, onDelta) {
  const resp = await fetch("/v1/chat/completions", {
    method: "POST", headers: headers({ "Content-Type": "application/json" }),
    body: JSON.stringify({ ...body, stream: true }),
  });
  if (!resp.ok) {
    let parsed = null;
    try { parsed = await resp.json(); } catch { /* not JSON */ }
    if (resp.status === 401) onUnauthenticated();
    throw new ApiError(resp.status, parsed);
  }
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "", text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, cut).trim();
      buffer = buffer.slice(cut + 1);
      if (!line.startsWith("data:")) continue;
      const data = line.slice(5).trim();
      if (data === "[DONE]") return text;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new ApiError(500, chunk);
      const delta = (chunk.choices || []).map((c) => (c.delta && c.delta.content) || "").join("");
      if (delta) { text += delta; onDelta(delta, text); }
    }
  }
  return text;
}
