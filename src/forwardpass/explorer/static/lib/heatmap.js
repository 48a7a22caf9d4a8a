// Small multiples of attention maps: one T × T heatmap per head, drawn at the box's own pixel width (rows: the query,
// the token reading; columns: the key, the token read). The causal half only: the upper triangle stays empty. A
// sequential single-hue scale (white to dark blue), which colour-blind readers read as well as anyone, with its
// legend ticked from 0 to 1. Each cell is a rect carrying data-head, data-q, data-k and data-w.

import { chartWidth, COLORS, shape, svgOf, text, textWidth } from "./charts.js";

const LOW = [255, 255, 255], HIGH = [8, 48, 107];  // ColorBrewer's Blues, its two ends
export const shade = (w) => `rgb(${LOW.map((a, i) => Math.round(a + (HIGH[i] - a) * Math.min(1, Math.max(0, w)))).join(",")})`;

/** heads: [head][query][key ≤ query] weights; title(h): a head's label; legend: the scale's title; returns the cell
 * size and columns used */
export function heatmaps(el, heads, { title, legend, minCell }) {
  const width = chartWidth(el);
  const T = heads[0].length, n = heads.length;
  const left = Math.max(textWidth(String(T - 1)), 7) + 8, gap = 12, titleH = 18, below = 18;
  const cellFor = (cols) => Math.floor((width - cols * (left + gap)) / (cols * T));
  let cols = n;
  while (cols > 1 && cellFor(cols) < minCell) cols--;
  const cell = Math.max(2, Math.min(22, cellFor(cols))), side = cell * T;
  const rows = Math.ceil(n / cols), legendH = 44, panelH = titleH + side + below;
  const [svg] = svgOf(el, legendH + rows * (panelH + gap));
  // the scale: 0 … 1, ticked
  const lw = Math.min(220, width - 60), lx = 4;
  const grad = shape("linearGradient", { id: `${el.id || "map"}-scale`, x1: 0, x2: 1, y1: 0, y2: 0 });
  [0, 1].forEach((o) => grad.appendChild(shape("stop", { offset: o, "stop-color": shade(o) })));
  const defs = shape("defs", {});
  defs.appendChild(grad);
  svg.appendChild(defs);
  svg.appendChild(text(lx, 12, legend, { weight: "600" }));
  svg.appendChild(shape("rect", { x: lx, y: 18, width: lw, height: 10, fill: `url(#${grad.id})`, stroke: COLORS.axis }));
  [0, 0.25, 0.5, 0.75, 1].forEach((v) => {
    svg.appendChild(shape("line", { class: "tick", x1: lx + v * lw, x2: lx + v * lw, y1: 28, y2: 32, stroke: COLORS.axis }));
    svg.appendChild(text(Math.min(lx + v * lw, width - 12), 42, String(v), { anchor: v === 0 ? "start" : "middle" }));
  });
  heads.forEach((rowsOf, h) => {
    const px = (h % cols) * (left + side + gap) + left, py = legendH + Math.floor(h / cols) * (panelH + gap) + titleH;
    const g = shape("g", { class: "head", "data-head": h });
    g.appendChild(text(px, py - 5, title(h), { weight: "600" }));
    rowsOf.forEach((weights, q) => weights.forEach((w, k) => g.appendChild(shape("rect", {
      x: px + k * cell, y: py + q * cell, width: cell, height: cell, fill: shade(w),
      "data-head": h, "data-q": q, "data-k": k, "data-w": w }))));
    // the frame (its empty upper triangle shows), the diagonal, and ticks at the first and last token
    g.appendChild(shape("rect", { x: px, y: py, width: side, height: side, fill: "none", stroke: COLORS.axis }));
    for (const v of [0, T - 1]) {
      g.appendChild(shape("line", { class: "tick", x1: px - 4, x2: px, y1: py + (v + 0.5) * cell, y2: py + (v + 0.5) * cell,
        stroke: COLORS.axis }));
      g.appendChild(text(px - 6, py + (v + 0.5) * cell + 4, String(v), { anchor: "end" }));
      g.appendChild(shape("line", { class: "tick", x1: px + (v + 0.5) * cell, x2: px + (v + 0.5) * cell, y1: py + side,
        y2: py + side + 4, stroke: COLORS.axis }));
      if (v === 0 || side > 24) g.appendChild(text(px + (v + 0.5) * cell, py + side + 16, String(v), { anchor: "middle" }));
    }
    svg.appendChild(g);
  });
  el.replaceChildren(svg);
  return { cell, cols };
}
