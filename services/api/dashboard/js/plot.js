// Line charts drawn by uPlot (vendored, MIT: ../vendor/uplot/; it replaced a hand-written SVG chart):
// chart(title, options) gives {el, update(series)}, a series being {name, points: [[step, y], ...]};
// a chart with no point is hidden.
// uPlot brings zoom (drag across; double-click resets) and the value of every series at the step
// under the pointer (its legend); around it: smoothing (an exponential moving average, the raw
// line kept faint), a log scale, and the shown data as CSV or the chart as PNG. What a chart shows
// is listed in a hidden list (data-series, data-points), so tests check it against the API.

import uPlot from "../vendor/uplot/uPlot.esm.js";
import { h, num } from "./dom.js";

const COLOURS = ["#2f6fdf", "#e07b00", "#1a9c5b", "#c2185b", "#7b4fd6", "#00838f", "#8d6e63", "#546e7a"];
const SMOOTHING = [["0", "no smoothing"], ["0.6", "smooth 0.6"], ["0.9", "smooth 0.9"], ["0.97", "smooth 0.97"]];
const W = 420, H = 190, FONT = "11px system-ui, sans-serif";

// The exponential moving average TensorBoard draws (debiased, so the first points are not pulled to 0).
export function smooth(values, weight) {
  if (!weight) return values;
  let last = 0, count = 0;
  return values.map((y) => {
    if (y === null || y === undefined) return y;
    last = last * weight + (1 - weight) * y; count += 1;
    return last / (1 - weight ** count);
  });
}

// The series laid on one x axis (every step any of them has), null where one has no point.
export function aligned(series) {
  const xs = [...new Set(series.flatMap((s) => s.points.map((p) => p[0])))].sort((a, b) => a - b);
  const at = new Map(xs.map((x, i) => [x, i]));
  return [xs, ...series.map((s) => {
    const ys = new Array(xs.length).fill(null);
    for (const [x, y] of s.points) ys[at.get(x)] = y;
    return ys;
  })];
}

function csv(series, data) {
  const quote = (s) => `"${String(s).replace(/"/g, '""')}"`;
  const lines = [["step", ...series.map((s) => quote(s.name))].join(",")];
  data[0].forEach((x, i) => lines.push([x, ...series.map((_, j) => data[j + 1][i] ?? "")].join(",")));
  return lines.join("\n") + "\n";
}

function save(href, name) {
  const a = h("a", { href, download: name });
  document.body.append(a); a.click(); a.remove();
}

export function chart(title, { yFormat = num, unit = "" } = {}) {
  const host = h("div", { class: "plot" });
  const listed = h("ul", { class: "series-list", hidden: true });
  const empty = h("p", { class: "muted empty" }, "no points yet");
  const smoothing = h("select", { class: "smoothing", "aria-label": "smoothing" },
    SMOOTHING.map(([v, t]) => h("option", { value: v }, t)));
  const log = h("input", { type: "checkbox", class: "log-scale" });
  const tools = h("div", { class: "chart-tools" }, smoothing, h("label", {}, log, " log"),
    h("button", { type: "button", class: "csv", onclick: () => shown && save(
      URL.createObjectURL(new Blob([csv(shown.series, shown.data)], { type: "text/csv" })), `${title}.csv`) }, "CSV"),
    h("button", { type: "button", class: "png", onclick: () => plot && save(plot.ctx.canvas.toDataURL("image/png"), `${title}.png`) }, "PNG"));
  const figure = h("figure", { class: "chart-card", "data-chart": title },
    h("figcaption", {}, title, unit ? h("span", { class: "muted" }, ` (${unit})`) : null, tools), host, empty, listed);
  let plot = null, last = [], shown = null, zoomed = false, drawnAs = "";
  host.addEventListener("dblclick", () => { zoomed = false; });  // uPlot's own reset of the zoom

  function draw() {
    const series = last;
    listed.replaceChildren(...series.map((s) => h("li", { "data-series": s.name, "data-points": s.points.length })));
    empty.hidden = series.length > 0;
    tools.hidden = !series.length;
    figure.hidden = !series.length;  // a chart with no point is not shown at all
    if (!series.length) { if (plot) plot.destroy(); plot = null; drawnAs = ""; return; }
    const weight = Number(smoothing.value);
    const raw = aligned(series);
    const logScale = log.checked && series.every((s) => s.points.every(([, y]) => y > 0));
    const lines = series.map((s, i) => ({ label: s.name, stroke: COLOURS[i % COLOURS.length], width: 1.6,
      spanGaps: true, value: (u, v) => (v == null ? "–" : yFormat(v)), points: { show: s.points.length <= 60, size: 4 } }));
    const faint = weight ? series.map((s, i) => ({ label: `${s.name} (raw)`, stroke: COLOURS[i % COLOURS.length] + "40",
      width: 1, spanGaps: true, value: (u, v) => (v == null ? "–" : yFormat(v)), points: { show: false } })) : [];
    const data = [raw[0], ...raw.slice(1).map((ys) => smooth(ys, weight)), ...(weight ? raw.slice(1) : [])];
    shown = { series: [...series, ...(weight ? series.map((s) => ({ name: `${s.name} (raw)` })) : [])], data };
    const as = JSON.stringify([series.map((s) => s.name), weight, logScale]);
    if (plot && as === drawnAs) { plot.setData(data, !zoomed); return; }  // new points: the zoom stays
    drawnAs = as;
    if (plot) plot.destroy();
    plot = new uPlot({
      width: Math.max(260, (figure.clientWidth || W + 20) - 20), height: H,
      scales: { x: { time: false }, y: logScale ? { distr: 3 } : {} },
      axes: [{ label: "step", labelSize: 16, labelFont: FONT, font: FONT },
        { values: (u, ticks) => ticks.map((v) => yFormat(v)), size: 60, font: FONT }],
      series: [{ label: "step", value: (u, v) => (v == null ? "–" : num(v)) }, ...lines, ...faint],
      legend: { live: true }, cursor: { drag: { x: true, y: false } },
      hooks: { setSelect: [(u) => { if (u.select.width > 0) zoomed = true; }] },
    }, data, host);
    figure.plot = plot;  // for tests: setCursor and the legend's values
  }
  smoothing.addEventListener("change", () => { zoomed = false; draw(); });
  log.addEventListener("change", () => { zoomed = false; draw(); });

  function update(series) {
    last = series.filter((s) => s.points.length);
    draw();
  }
  return { el: figure, update };
}

// The series of one metric field over a run's points (those where it is a number).
export function seriesOf(points, name, pick) {
  const out = [];
  for (const p of points) {
    const y = pick(p);
    if (typeof y === "number" && Number.isFinite(y)) out.push([p.step, y]);
  }
  return { name, points: out };
}
