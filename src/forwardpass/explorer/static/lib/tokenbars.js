// Bars for token pieces: one row per token, its label in a column of its own that is measured (in the page's own
// font, not estimated), so a label never runs into its bar; a value axis from the smallest value (or 0) to the
// largest, ticked and labelled; negative values drawn left of the zero line. Labels are written by the caller, token
// pieces with i18n.pieceLabel (raw bytes as ⟨E5 9D⟩, whitespace as ␣ ↵).

import { COLORS, chartWidth, remember, shape, svgOf, text, ticks } from "./charts.js";
import { fmt } from "./i18n.js";

/** text for a text alternative: token pieces quoted (as the tokenizer's strings are), so they read as pieces */
function said(s, token = false) {
  const quote = (x) => (x.startsWith('"') ? x : JSON.stringify(x));
  if (!Array.isArray(s)) return token ? quote(String(s)) : String(s);
  return s.map((p) => (p.tag === "tok" ? quote(p.text) : p.text)).join("");
}

let context;
/** the rendered width of 12 px text in el's font (parts or a string) */
export function measure(el, s) {
  context ??= document.createElement("canvas").getContext("2d");
  context.font = `12px ${getComputedStyle(el).fontFamily}`;
  const plain = Array.isArray(s) ? s.map((p) => p.text).join("") : String(s);
  return Math.ceil(context.measureText(plain).width);
}

/** Horizontal bars, one per token: items [{ label, token, value, text, mark, dim }] (label a string or i18n parts;
 * token: the label is a token piece). options: { title, axis (the value axis's title), tick (value → its label),
 * summary (the chart's text alternative; default: every label and value) } */
export function tokenBars(el, items, options = {}) {
  remember(el, () => tokenBars(el, items, options));
  const { title = "", axis = "", tick = fmt.tick, summary } = options;
  const width = chartWidth(el);
  const labelW = Math.max(0, ...items.map((d) => measure(el, d.label))) + 12;
  const textW = Math.max(0, ...items.map((d) => measure(el, d.text))) + 10;
  const above = labelW > width * 0.45;  // long labels: each on its own line above its bar
  const left = above ? 4 : labelW, rowH = above ? 38 : 22, barTop = above ? 19 : 3;
  const plotW = width - left - textW - 6;
  const values = items.map((d) => d.value);
  const lo = Math.min(0, ...values), hi = Math.max(0, ...values, 1e-12);
  let marks = ticks(lo, hi, plotW < 260 ? 3 : 5, true);
  const step = marks.length > 1 ? marks[1] - marks[0] : hi;
  if (lo < 0 && marks[0] > lo) marks = [+(marks[0] - step).toPrecision(12), ...marks];  // the first tick covers lo
  const min = Math.min(lo, marks[0]), max = marks[marks.length - 1];
  const X = (v) => left + (plotW * (v - min)) / (max - min || 1);
  const top0 = title ? 22 : 4, rowsH = items.length * rowH, axisH = 22 + (axis ? 18 : 0);
  const [svg] = svgOf(el, top0 + rowsH + axisH);
  if (title) svg.appendChild(text(4, 14, title, { weight: "600" }));
  const base = top0 + rowsH + 2;
  marks.forEach((v) => {  // grid lines behind the bars; a tick and its label under the axis
    svg.appendChild(shape("line", { x1: X(v), x2: X(v), y1: top0, y2: base, stroke: COLORS.grid }));
    svg.appendChild(shape("line", { class: "tick", x1: X(v), x2: X(v), y1: base, y2: base + 5, stroke: COLORS.axis }));
    const w = measure(el, tick(v)), x = Math.min(Math.max(X(v), w / 2 + 2), width - w / 2 - 2);
    svg.appendChild(text(x, base + 17, tick(v), { anchor: "middle" }));
  });
  svg.appendChild(shape("line", { x1: X(min), x2: X(max), y1: base, y2: base, stroke: COLORS.axis }));
  svg.appendChild(shape("line", { x1: X(0), x2: X(0), y1: top0, y2: base, stroke: COLORS.axis }));
  if (axis) svg.appendChild(text(width - 2, base + 35, axis, { weight: "600", anchor: "end" }));
  items.forEach((d, i) => {
    const y = top0 + i * rowH;
    svg.appendChild(text(4, y + 15, d.label, { token: d.token }));
    const a = X(Math.min(0, d.value)), b = X(Math.max(0, d.value));
    svg.appendChild(shape("rect", { x: a, y: y + barTop, width: Math.max(1, b - a), height: 16, rx: 2,
      fill: d.mark ? COLORS.mark : d.dim ? COLORS.dim : COLORS.bar }));
    svg.appendChild(text(Math.max(b, X(0)) + 5, y + barTop + 12, d.text));
  });
  el.replaceChildren(svg);
  el.setAttribute("aria-label", summary ??
    `${title ? said(title) + ": " : ""}${items.map((d) => `${said(d.label, d.token)} ${said(d.text)}`).join("; ")}`);
}
