// Pieces for the article's diagrams (the stages, a block's fork and merge, pre- vs post-norm, reach): boxes, arrows
// and + nodes in SVG, on charts.js's palette and text. Every line here is dark enough to see (≥ 3:1 on white);
// fills are light, so the 12 px ink text on them keeps its contrast.

import { COLORS, shape, text, textWidth } from "./charts.js";

/** light fills for a diagram's boxes: the lit step, the ones done, the ones still to come, a norm, a sublayer */
export const FILLS = { lit: "#cfe6f5", done: "#e9eef3", todo: "#ffffff", norm: "#fbe0cf", sublayer: "#d9efe7" };

/** a box with its label centred (a string or i18n parts); state "lit" | "done" | "todo" sets its fill and outline */
export function box(svg, { x, y, w, h, label, state, fill, stroke = COLORS.axis, width = 1.5, dash = "", bold = false,
  attrs = {} }) {
  const g = shape("g", attrs);
  const lit = state === "lit";
  g.appendChild(shape("rect", { x, y, width: w, height: h, rx: 5,
    fill: fill || FILLS[state] || FILLS.todo, stroke: lit ? COLORS.bar : stroke, "stroke-width": lit ? 3 : width,
    "stroke-dasharray": state === "todo" ? "5 3" : dash }));
  if (label !== undefined)
    g.appendChild(text(x + w / 2, y + h / 2 + 4, label, { anchor: "middle", weight: lit || bold ? "700" : "400" }));
  svg.appendChild(g);
  return g;
}

/** a line from (x1, y1) to (x2, y2) with an arrowhead at its end (head: false, none) */
export function arrow(svg, x1, y1, x2, y2, { color = COLORS.ink, width = 2, dash = "", head = true, attrs = {} } = {}) {
  const g = shape("g", attrs);
  g.appendChild(shape("line", { x1, y1, x2, y2, stroke: color, "stroke-width": width, "stroke-dasharray": dash }));
  if (head) {
    const a = Math.atan2(y2 - y1, x2 - x1), s = 4 + width * 1.5;
    const p = (da) => `${x2 - s * Math.cos(a + da)},${y2 - s * Math.sin(a + da)}`;
    g.appendChild(shape("polygon", { points: `${x2},${y2} ${p(0.45)} ${p(-0.45)}`, fill: color }));
  }
  svg.appendChild(g);
  return g;
}

/** a polyline through points [[x, y], …] (no arrowhead) */
export function path(svg, points, { color = COLORS.ink, width = 2, dash = "", attrs = {} } = {}) {
  const e = shape("polyline", { points: points.map((p) => p.join(",")).join(" "), fill: "none", stroke: color,
    "stroke-width": width, "stroke-dasharray": dash, "stroke-linejoin": "round", ...attrs });
  svg.appendChild(e);
  return e;
}

/** the + where a branch's output is added into the stream */
export function plus(svg, x, y, { r = 9, color = COLORS.ink, fill = "#ffffff", attrs = {} } = {}) {
  const g = shape("g", attrs);
  g.appendChild(shape("circle", { cx: x, cy: y, r, fill, stroke: color, "stroke-width": 2 }));
  g.appendChild(shape("line", { x1: x - r + 4, x2: x + r - 4, y1: y, y2: y, stroke: color, "stroke-width": 2 }));
  g.appendChild(shape("line", { x1: x, x2: x, y1: y - r + 4, y2: y + r - 4, stroke: color, "stroke-width": 2 }));
  svg.appendChild(g);
  return g;
}

/** the widest of these labels at 12 px, in px */
export const widest = (labels) => Math.max(0, ...labels.map((l) => textWidth(l)));
