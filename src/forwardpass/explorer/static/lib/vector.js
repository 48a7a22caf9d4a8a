// Long vectors and large matrices as the explorer sends them (explorer/strips.py), drawn in SVG: a vector's first
// entries as numbers and a heat strip of the whole, its shape beside it; a matrix as a grid of cells with its shape.
// Each cell of a strip or grid stands for a run of entries (its largest in magnitude, sign kept) as a level −9 … 9 of
// the strip's own scale. The scale diverges from white: blue below 0, vermillion above (Okabe and Ito's two ends,
// which readers with any common colour-vision deficiency tell apart), and every strip is framed in a dark line.
//
//   vectorRow(svg, x, y, width, v, { name, lit })   one vector on two or three lines; returns the height used
//   strip(svg, x, y, w, h, strip, { vertical, lit }) the heat strip alone (lit: [first, last] cells outlined)
//   grid(svg, x, y, w, h, m, { litRow })             a matrix's cells, framed (litRow: its first row outlined)
//   legend(svg, x, y)                                the scale, ticked; returns the height used
//   num(x)                                           a number as the pictures write it: 4 significant digits

import { COLORS, shape, text, textWidth } from "./charts.js";

const BLUE = [0, 114, 178], VERMILLION = [213, 94, 0], WHITE = [255, 255, 255];

/** a level −9 … 9 as a colour: white at 0, full blue or vermillion at ±9; `soft` stops at 35% (under text) */
export function cellFill(level, soft = false) {
  const to = level < 0 ? BLUE : VERMILLION, f = Math.min(1, Math.abs(level) / 9) * (soft ? 0.35 : 1);
  return `rgb(${WHITE.map((w, i) => Math.round(w + (to[i] - w) * f)).join(",")})`;
}

/** 4 significant digits, a true minus sign, no trailing zeros: 0.1052, −1.081, 14.44, 1.2e-5 */
export function num(x) {
  if (x === 0) return "0";
  const a = Math.abs(x);
  const s = a >= 1e5 || a < 1e-4 ? x.toExponential(1) : String(Number(x.toPrecision(4)));
  return s.replace(/^-/, "−");
}

/** a value's level on a strip's scale (for the number boxes' tint) */
const levelOf = (x, scale) => Math.max(-9, Math.min(9, Math.round((9 * x) / (scale || 1))));

/** the heat strip of a vector: cells left to right (or top to bottom), framed; `lit` [a, b]: those cells outlined */
export function strip(svg, x, y, w, h, { cells }, { vertical = false, lit = null } = {}) {
  const n = cells.length, step = (vertical ? h : w) / n;
  const g = shape("g", { class: "strip" });
  cells.forEach((level, i) => g.appendChild(shape("rect", vertical
    ? { x, y: y + i * step, width: w, height: step + 0.3, fill: cellFill(level) }
    : { x: x + i * step, y, width: step + 0.3, height: h, fill: cellFill(level) })));
  g.appendChild(shape("rect", { x, y, width: w, height: h, fill: "none", stroke: COLORS.axis }));
  if (lit) {
    const [a, b] = lit;
    g.appendChild(shape("rect", vertical
      ? { x: x - 2, y: y + a * step - 1, width: w + 4, height: (b - a + 1) * step + 2, fill: "none", stroke: COLORS.ink,
        "stroke-width": 2 }
      : { x: x + a * step - 1, y: y - 2, width: (b - a + 1) * step + 2, height: h + 4, fill: "none", stroke: COLORS.ink,
        "stroke-width": 2 }));
  }
  svg.appendChild(g);
  return g;
}

/** a matrix's grid of cells in a w × h box, framed; `litRow`: its first row of cells outlined */
export function grid(svg, x, y, w, h, { grid: m }, { litRow = false } = {}) {
  const cw = w / m.cols, ch = h / m.rows;
  const g = shape("g", { class: "grid-cells" });
  m.cells.forEach((level, i) => g.appendChild(shape("rect", { x: x + (i % m.cols) * cw, y: y + Math.floor(i / m.cols) * ch,
    width: cw + 0.3, height: ch + 0.3, fill: cellFill(level) })));
  g.appendChild(shape("rect", { x, y, width: w, height: h, fill: "none", stroke: COLORS.axis }));
  if (litRow) g.appendChild(shape("rect", { x: x - 2, y: y - 2, width: w + 4, height: ch + 4, fill: "none",
    stroke: COLORS.ink, "stroke-width": 2 }));
  svg.appendChild(g);
  return g;
}

const BOX = 72;  // one number's box: "−0.008646" at 12 px

/** One vector: its name (code) and shape, its first entries as numbers (tinted by value), "…", its L2 norm, and
 * the heat strip of the whole under them, the cells holding the numbers shown outlined. Two lines where the box is
 * wide, three where it is not. Returns the height used. */
export function vectorRow(svg, x, y, width, v, { name, note = "", lit = false } = {}) {
  const n = v.shape[0], shapeText = `(${n})`;
  const labelW = Math.max(textWidth(name) + textWidth(shapeText) + 18, 96);
  const wide = width >= 560;
  const boxesX = wide ? x + labelW : x, boxesY = wide ? y : y + 20;
  const normText = note || `‖·‖ = ${num(v.norm)}`;
  const room = width - (boxesX - x) - textWidth(normText) - 30;
  const shown = Math.max(2, Math.min(v.lead.length, Math.floor(room / (BOX + 4))));
  const head = text(x, y + 14, [{ text: name, tag: "code" }], { weight: lit ? "700" : "600" });
  svg.appendChild(head);
  svg.appendChild(text(x + textWidth(name) + 8, y + 14, shapeText, { fill: COLORS.axis }));
  v.lead.slice(0, shown).forEach((value, i) => {
    const bx = boxesX + i * (BOX + 4);
    svg.appendChild(shape("rect", { class: "entry", x: bx, y: boxesY, width: BOX, height: 20, rx: 3,
      fill: cellFill(levelOf(value, v.strip.scale), true), stroke: COLORS.axis }));
    svg.appendChild(text(bx + BOX / 2, boxesY + 14, num(value), { anchor: "middle" }));
  });
  const after = boxesX + shown * (BOX + 4);
  svg.appendChild(text(after + 2, boxesY + 14, "…", { fill: COLORS.axis }));
  svg.appendChild(text(x + width - 2, boxesY + 14, normText, { anchor: "end", fill: COLORS.axis }));
  const sy = boxesY + 26;
  strip(svg, x, sy, width - 4, 12, v.strip, { lit: [0, Math.floor((shown - 1) / v.strip.per)] });
  return sy + 12 + 10 - y;
}

/** the scale's legend: a short strip from −9 to 9, ticked −, 0, +; returns its height (its words are the caller's) */
export function legend(svg, x, y) {
  const cells = { cells: Array.from({ length: 19 }, (_, i) => i - 9) };
  strip(svg, x, y + 3, 114, 10, cells);
  svg.appendChild(text(x, y + 28, "−", { anchor: "start" }));
  svg.appendChild(text(x + 57, y + 28, "0", { anchor: "middle" }));
  svg.appendChild(text(x + 114, y + 28, "+", { anchor: "end" }));
  return 32;
}
