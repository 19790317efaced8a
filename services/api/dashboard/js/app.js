// The dashboard's shell: the token prompt and the router (#/section/id) that renders each page.

import { api, token, whenUnauthenticated } from "./api.js";
import { clear, errorBox, fill, h } from "./dom.js";
import comparisonPage from "./pages/comparison.js";
import comparisonsPage from "./pages/comparisons.js";
import datasetsPage from "./pages/datasets.js";
import endpointPage from "./pages/endpoint.js";
import endpointsPage from "./pages/endpoints.js";
import evaluationPage from "./pages/evaluation.js";
import lineagePage from "./pages/lineage.js";
import newRunPage from "./pages/new_run.js";
import poolsPage from "./pages/pools.js";
import runPage from "./pages/run.js";
import runsPage from "./pages/runs.js";

const ROUTES = [
  [/^#\/runs\/?$/, runsPage, "runs"],
  [/^#\/runs\/new$/, newRunPage, "runs"],
  [/^#\/runs\/([^/]+)$/, runPage, "runs"],
  [/^#\/datasets\/?$/, datasetsPage, "datasets"],
  [/^#\/lineage\/([^/]+)$/, lineagePage, "runs"],
  [/^#\/comparisons\/?$/, comparisonsPage, "comparisons"],
  [/^#\/comparisons\/([^/]+)$/, comparisonPage, "comparisons"],
  [/^#\/evaluations\/([^/]+)$/, evaluationPage, "comparisons"],
  [/^#\/pools\/?$/, poolsPage, "pools"],
  [/^#\/endpoints\/?$/, endpointsPage, "endpoints"],
  [/^#\/endpoints\/([^/]+)$/, endpointPage, "endpoints"],
];

const main = document.getElementById("main");
let life = null;

// What a page may keep running while it is shown: timers end when the user goes elsewhere.
function newLife() {
  const timers = [];
  return {
    shown: true,
    every(ms, fn) {
      const tick = async () => {
        if (!this.shown) return;
        try { await fn(); } catch (err) { console.warn(err); }
        if (this.shown) timers.push(setTimeout(tick, ms));
      };
      timers.push(setTimeout(tick, ms));
    },
    end() { this.shown = false; timers.forEach(clearTimeout); },
  };
}

async function route() {
  if (life) life.end();
  life = newLife();
  if (!token.get()) { askForToken(); return; }
  const hash = location.hash || "#/runs";
  const found = ROUTES.find(([pattern]) => pattern.test(hash));
  document.querySelectorAll("#nav a").forEach((a) => a.classList.toggle("active", found && a.dataset.section === found[2]));
  clear(main);
  if (!found) { main.append(errorBox(new Error(`no page at ${hash}`))); return; }
  const [pattern, page] = found;
  const params = hash.match(pattern).slice(1).map(decodeURIComponent);
  try {
    await page(main, params, life);
  } catch (err) {
    main.append(errorBox(err));
  }
}

function askForToken(message = "") {
  const dialog = document.getElementById("token-dialog");
  document.getElementById("token-error").textContent = message;
  document.getElementById("sign-out").hidden = true;
  document.getElementById("who").textContent = "";
  fill(main, h("p", { class: "muted" }, "Sign in with a token to see its workloads."));
  if (!dialog.open) dialog.showModal();
}

document.getElementById("token-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = document.getElementById("token-input");
  token.set(input.value.trim());
  try {
    await api.get("/v1/info");
  } catch (err) {
    token.clear();
    document.getElementById("token-error").textContent = err.message;
    return;
  }
  input.value = "";
  document.getElementById("token-dialog").close();
  showWho();
  route();
});

document.getElementById("sign-out").addEventListener("click", () => { token.clear(); route(); });

async function showWho() {
  const info = await api.get("/v1/info");
  document.getElementById("who").textContent = `v${info.version}`;
  document.getElementById("sign-out").hidden = false;
}

// `training ui` opens /ui/#token=TOKEN: the token is kept as a typed one is and taken out of the
// address at once (a fragment never reaches the server, so no log holds it).
function signInFromAddress() {
  const found = location.hash.match(/^#token=([^&]+)$/);
  if (!found) return;
  token.set(decodeURIComponent(found[1]));
  history.replaceState(null, "", location.pathname + "#/runs");
}

signInFromAddress();
whenUnauthenticated(() => { token.clear(); askForToken("the deployment does not know this token"); });
window.addEventListener("hashchange", route);
if (token.get()) showWho().catch(() => {});
route();
