// Line charts drawn as SVG, no library: chart(title) gives a figure whose update(series) redraws it.
// A series is {name, points: [[x, y], ...]}; each line carries data-series and data-points, so
// what a chart shows can be checked against the API's answer. A chart with no point is hidden.

import { clear, h, num, svg } from "./dom.js";

const W = 440, H = 190, PAD = { left: 56, right: 10, top: 10, bottom: 26 };
const COLOURS = ["#2f6fdf", "#e07b00", "#1a9c5b", "#c2185b", "#7b4fd6", "#00838f", "#8d6e63", "#546e7a"];

function ticks(lo, hi, count) {
  if (lo === hi) return [lo];
  return Array.from({ length: count }, (_, i) => lo + ((hi - lo) * i) / (count - 1));
}

export function chart(title, { yFormat = num, unit = "" } = {}) {
  const plot = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img", "aria-label": title });
  const legend = h("div", { class: "legend" });
  const figure = h("figure", { class: "chart-card", "data-chart": title },
    h("figcaption", {}, title, unit ? h("span", { class: "muted" }, ` (${unit})`) : null), legend, plot);

  function update(series) {
    series = series.filter((s) => s.points.length);
    clear(plot); clear(legend);
    figure.hidden = !series.length;
    if (!series.length) return;
    const xs = series.flatMap((s) => s.points.map((p) => p[0]));
    const ys = series.flatMap((s) => s.points.map((p) => p[1]));
    let [x0, x1] = [Math.min(...xs), Math.max(...xs)];
    let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
    if (x0 === x1) { x0 -= 1; x1 += 1; }
    if (y0 === y1) { const d = Math.abs(y0) * 0.1 || 1; y0 -= d; y1 += d; }
    const sx = (x) => PAD.left + ((x - x0) / (x1 - x0)) * (W - PAD.left - PAD.right);
    const sy = (y) => H - PAD.bottom - ((y - y0) / (y1 - y0)) * (H - PAD.top - PAD.bottom);

    for (const y of ticks(y0, y1, 4)) {
      plot.append(svg("line", { x1: PAD.left, x2: W - PAD.right, y1: sy(y), y2: sy(y), class: "grid" }));
      plot.append(svg("text", { x: PAD.left - 4, y: sy(y) + 3, "text-anchor": "end", class: "tick" }, yFormat(y)));
    }
    for (const x of ticks(x0, x1, 5)) {
      plot.append(svg("text", { x: sx(x), y: H - PAD.bottom + 14, "text-anchor": "middle", class: "tick" },
        num(Math.round(x))));
    }
    plot.append(svg("line", { x1: PAD.left, x2: PAD.left, y1: PAD.top, y2: H - PAD.bottom, class: "axis" }));
    plot.append(svg("line", { x1: PAD.left, x2: W - PAD.right, y1: H - PAD.bottom, y2: H - PAD.bottom, class: "axis" }));

    series.forEach((s, i) => {
      const colour = COLOURS[i % COLOURS.length];
      const line = svg("polyline", {
        points: s.points.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(" "),
        stroke: colour, class: "series", "data-series": s.name, "data-points": s.points.length,
      });
      plot.append(line);
      if (s.points.length <= 120) {
        for (const [x, y] of s.points) {
          plot.append(svg("circle", { cx: sx(x), cy: sy(y), r: 2.2, fill: colour },
            svg("title", {}, `${s.name} at step ${x}: ${num(y)}`)));
        }
      }
      const last = s.points[s.points.length - 1][1];
      legend.append(h("span", { class: "key" }, h("span", { class: "swatch", "data-colour": colour }), `${s.name} ${num(last)}`));
    });
    legend.querySelectorAll(".swatch").forEach((el) => { el.style.background = el.dataset.colour; });
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
