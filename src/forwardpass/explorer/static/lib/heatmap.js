// Small multiples of attention maps: one T × T heatmap per head, drawn at the box's own pixel width (rows: the query,
// the token reading; columns: the key, the token read). The causal half only: the upper triangle stays empty. A
// sequential single-hue scale (white to dark blue), which colour-blind readers read as well as anyone, with its
// legend ticked from 0 to 1. Each cell is a rect carrying data-head, data-q, data-k and data-w. Both axes are ticked
// every `step` tokens (1, 2, 5, 10, …: as close as the labels allow), and every head fits in MAX_HEIGHT pixels: a long
// prompt shrinks the cells rather than stretching the page.

import { chartWidth, COLORS, shape, svgOf, text, textWidth } from "./charts.js";

const LOW = [255, 255, 255], HIGH = [8, 48, 107];
const MAX_HEIGHT = 1400;  // px: every head's map, however long the prompt
const STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];
/** the tick spacing, in tokens, that keeps labels `room` px apart on cells of `cell` px */
const tickStep = (cell, room) => STEPS.find((s) => s * cell >= room) ?? STEPS[STEPS.length - 1];  // ColorBrewer's Blues, its two ends
export const shade = (w) => `rgb(${LOW.map((a, i) => Math.round(a + (HIGH[i] - a) * Math.min(1, Math.max(0, w)))).join(",")})`;

/** heads: [head][query][key ≤ query] weights; title(h): a head's label; legend: the scale's title; returns the cell
 * size and columns used */
export function heatmaps(el, heads, { title, legend, minCell }) {
  const width = chartWidth(el);
  const T = heads[0].length, n = heads.length;
  const left = Math.max(textWidth(String(T - 1)), 7) + 8, gap = 12, titleH = 18, below = 18;
  const cellFor = (cols) => Math.floor((width - cols * (left + gap)) / (cols * T));
  const legendH = 44;
  // the columns whose cells are largest within both the width and MAX_HEIGHT (ties: more columns, a shorter figure);
  // the most columns whose cells are at least minCell wide, where the height allows it
  const cellOf = (cols) => {
    const rows = Math.ceil(n / cols);
    return Math.min(22, cellFor(cols), Math.floor((MAX_HEIGHT - legendH - rows * (titleH + below + gap)) / (rows * T)));
  };
  let cols = 1;
  for (let c = 2; c <= n; c++) if (cellFor(c) >= 1 && cellOf(c) >= Math.min(cellOf(cols), minCell)) cols = c;
  const rows = Math.ceil(n / cols), cell = Math.max(1, cellOf(cols)), side = cell * T;
  const panelH = titleH + side + below;
  const step = tickStep(cell, textWidth(String(T - 1)) + 6), rowStep = tickStep(cell, 13);
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
    // the frame (its empty upper triangle shows) and both axes ticked every few tokens, the last one always
    g.appendChild(shape("rect", { x: px, y: py, width: side, height: side, fill: "none", stroke: COLORS.axis }));
    for (const v of ticks(T, rowStep)) {
      g.appendChild(shape("line", { class: "tick", x1: px - 4, x2: px, y1: py + (v + 0.5) * cell, y2: py + (v + 0.5) * cell,
        stroke: COLORS.axis }));
      g.appendChild(text(px - 6, py + (v + 0.5) * cell + 4, String(v), { anchor: "end" }));
    }
    for (const v of ticks(T, step)) {
      g.appendChild(shape("line", { class: "tick", x1: px + (v + 0.5) * cell, x2: px + (v + 0.5) * cell, y1: py + side,
        y2: py + side + 4, stroke: COLORS.axis }));
      g.appendChild(text(px + (v + 0.5) * cell, py + side + 16, String(v), { anchor: "middle" }));
    }
    svg.appendChild(g);
  });
  el.replaceChildren(svg);
  return { cell, cols };
}

/** 0, step, 2·step, … and the last index T − 1 (a multiple too close before it dropped; after 0 alone, the last one) */
function ticks(T, step) {
  if (T === 1) return [0];
  const at = [];
  for (let v = 0; v < T - 1; v += step) at.push(v);
  if (T - 1 - at[at.length - 1] < step / 2) {  // the last label would touch the multiple before it
    if (at.length === 1) return at;
    at.pop();
  }
  at.push(T - 1);
  return at;
}
