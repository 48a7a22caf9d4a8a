// Charts as SVG, drawn at their box's own pixel width (one SVG unit = one CSS pixel), so their 12 px text stays
// 12 px on a phone, and drawn again when the window changes size. Text given as a string is plain; text given as
// i18n parts keeps token pieces (data-token) and code (data-code) apart. Every chart of values has its value axis
// ticked and labelled (each tick mark is a line of class "tick").

import { fmt, t } from "./i18n.js";

const SVG = "http://www.w3.org/2000/svg";
// Okabe and Ito's palette, which readers with any common colour-vision deficiency tell apart: blue, vermillion and
// bluish green, and a neutral grey; each ≥ 3:1 against white (5.2, 3.9, 3.4 and 4.5:1). Text (ink, axis) ≥ 4.5:1.
// Series after the first are also dashed (DASHES), so no line is told from another by its colour alone.
export const COLORS = { bar: "#0072b2", mark: "#d55e00", dim: "#767676", third: "#009e73", ink: "#1d232a",
  axis: "#5b6673", grid: "#e3e6ea" };
export const DASHES = ["", "7 4", "2 3"];

const drawn = new Map();  // chart element → the call that drew it
let resizing;
window.addEventListener("resize", () => {
  clearTimeout(resizing);
  resizing = setTimeout(() => drawn.forEach((draw) => draw()), 100);
});

/** remember how `el` was drawn, so a resize draws it again */
export const remember = (el, draw) => drawn.set(el, draw);

export function chartWidth(el) { return Math.max(260, Math.floor(el.clientWidth || 560)); }

/** width of 12 px text: CJK characters are square, Latin ones about 7 px */
export const textWidth = (s) => [...plain(s)].reduce((w, ch) => w + (ch.charCodeAt(0) > 0x2e80 ? 12 : 7), 0);
const plain = (s) => (Array.isArray(s) ? s.map((p) => p.text).join("") : String(s));

export function svgOf(el, height) {
  const svg = document.createElementNS(SVG, "svg"), width = chartWidth(el);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", width);
  return [svg, width];
}

export function shape(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  Object.entries(attrs).forEach(([k, v]) => e.setAttribute(k, v));
  return e;
}

/** 12 px text at (x, y); content a string or i18n parts */
export function text(x, y, content, { weight = "400", anchor = "start", fill = COLORS.ink, token = false } = {}) {
  const e = shape("text", { x, y, "font-size": 12, "font-weight": weight, "text-anchor": anchor, fill });
  for (const p of Array.isArray(content) ? content : [{ text: String(content), tag: token ? "tok" : undefined }]) {
    if (!p.tag) { e.appendChild(document.createTextNode(p.text)); continue; }
    const span = document.createElementNS(SVG, "tspan");
    span.textContent = p.text;
    if (p.tag === "tok") span.setAttribute("data-token", "");
    if (p.tag === "code") { span.setAttribute("data-code", ""); span.setAttribute("font-family", "monospace"); }
    e.appendChild(span);
  }
  return e;
}

export function rect(svg, attrs, label) {
  svg.appendChild(shape("rect", attrs));
  if (label !== undefined) svg.appendChild(text(attrs.x + 4, attrs.y + attrs.height / 2 + 4, label));
}

/** Horizontal bars: items [{ label, value, text, mark, dim, token }] (label: string or parts; token: the label is a
 * token piece), drawn into el (an element with role="img"), over a value axis from 0, ticked and labelled. Labels
 * are never cut: where they do not fit beside their bars, each goes on its own line above its bar.
 * options: { axis: the value axis's title with its unit, tick: (value) => its label (default fmt.tick) } */
export function bars(el, items, title = "", options = {}) {
  remember(el, () => bars(el, items, title, options));
  const { axis = "", tick = fmt.tick } = options;
  const width = chartWidth(el), top = Math.max(...items.map((d) => Math.abs(d.value)), 1e-12);
  const longest = Math.max(...items.map((d) => textWidth(d.label)), 0) + 8;
  const textW = Math.max(...items.map((d) => textWidth(d.text)), 0) + 10;
  const above = longest > width * 0.4;  // labels on their own lines
  const labelW = above ? 0 : longest, rowH = above ? 38 : 22, barTop = above ? 19 : 3;
  const plotW = width - labelW - textW - 8;
  const marks = ticks(0, top, plotW < 260 ? 3 : 5, true), max = marks[marks.length - 1];  // the last tick covers all
  const X = (v) => labelW + 4 + (plotW * Math.abs(v)) / max;
  const rowsH = items.length * rowH, axisH = 22 + (axis ? 18 : 0);
  let y = 2;
  const [svg] = svgOf(el, (title ? 22 : 4) + rowsH + axisH);
  if (title) { svg.appendChild(text(4, 14, title, { weight: "600" })); y = 22; }
  const base = y + rowsH + 2;
  marks.forEach((v) => {  // grid lines behind the bars, a tick and its label under the axis
    svg.appendChild(shape("line", { x1: X(v), x2: X(v), y1: y, y2: base, stroke: COLORS.grid }));
    svg.appendChild(shape("line", { class: "tick", x1: X(v), x2: X(v), y1: base, y2: base + 5, stroke: COLORS.axis }));
    const last = v === max && X(v) + textWidth(tick(v)) / 2 > width;
    svg.appendChild(text(last ? width - 2 : X(v), base + 17, tick(v), { anchor: last ? "end" : "middle" }));
  });
  svg.appendChild(shape("line", { x1: X(0), x2: X(max), y1: base, y2: base, stroke: COLORS.axis }));
  svg.appendChild(shape("line", { x1: X(0), x2: X(0), y1: y, y2: base, stroke: COLORS.axis }));
  if (axis) svg.appendChild(text(Math.min(width - 2, Math.max(X(max), textWidth(axis) + 4)), base + 35, axis,
    { weight: "600", anchor: "end" }));
  items.forEach((d, i) => {
    const top = y + i * rowH;
    svg.appendChild(text(4, top + 15, d.label, { token: d.token }));
    const w = Math.max(1, X(d.value) - X(0));
    svg.appendChild(shape("rect", { x: X(0), y: top + barTop, width: w, height: 16, rx: 2,
      fill: d.mark ? COLORS.mark : d.dim ? COLORS.dim : COLORS.bar }));
    svg.appendChild(text(X(0) + w + 6, top + barTop + 12, d.text));
  });
  el.replaceChildren(svg);
  const named = (d) => (d.token && !String(d.label).startsWith('"') ? JSON.stringify(d.label) : plain(d.label));  // pieces quoted
  el.setAttribute("aria-label", `${title ? plain(title) + ": " : ""}${items.map((d) => `${named(d)} ${d.text}`).join("; ")}`);
}

/** round steps (1, 2 or 5 × 10^k) in lo … hi, about `count` of them; `cover`: the last one at or above hi */
export function ticks(lo, hi, count = 5, cover = false) {
  const span = Math.max(hi - lo, 1e-12), raw = span / count, mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const end = cover ? Math.ceil(hi / step - 1e-9) * step : hi;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= end + step * 1e-9; v += step) out.push(+v.toPrecision(12));
  return out;
}

/** A line chart of series [[x, y], …] with both axes ticked and labelled:
 * { names: [legend per series], x: "x axis title with its unit", y: "y axis title with its unit", markX, integerX,
 *   markLabel: the first series' value at markX, written where its guide meets the y axis,
 *   bands: per series [[x, lo, hi], …], a range drawn as a light band behind its line (repeated measurements) } */
export function lines(el, series, options) {
  remember(el, () => lines(el, series, options));
  const { names, x: xTitle, y: yTitle, markX, integerX = true, markLabel, bands = [] } = options;
  const xs = series.flatMap((s) => s.map((p) => p[0]));
  const ys = [...series.flatMap((s) => s.map((p) => p[1])), ...bands.flatMap((b) => b.map((p) => p[2]))];
  const [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  const yTicks = ticks(0, Math.max(...ys, 1e-12), 5, true), yMax = yTicks[yTicks.length - 1];  // the top covers every y
  const xTicks = ticks(x0, Math.max(x1, x0 + 1), 6).filter((v) => v >= x0 && (!integerX || Number.isInteger(v)));
  const legendH = 18 * names.length, top = legendH + 24, plotH = 150, height = top + plotH + 44;
  const [svg, width] = svgOf(el, height);
  const left = Math.max(...yTicks.map((v) => textWidth(fmt.tick(v)))) + 14, right = 16;
  const X = (x) => left + ((x - x0) / Math.max(x1 - x0, 1)) * (width - left - right);
  const Y = (y) => top + plotH - (y / yMax) * plotH;
  const colors = [COLORS.bar, COLORS.mark, COLORS.third];
  names.forEach((name, i) => {  // the legend: a swatch of each line, its name in ink
    svg.appendChild(shape("line", { x1: 4, x2: 24, y1: 10 + 18 * i, y2: 10 + 18 * i, stroke: colors[i], "stroke-width": 3,
      "stroke-dasharray": DASHES[i] || "" }));
    svg.appendChild(text(30, 14 + 18 * i, name));
  });
  svg.appendChild(text(4, legendH + 14, yTitle, { weight: "600" }));  // the y axis's title, above it
  yTicks.forEach((v) => {
    svg.appendChild(shape("line", { x1: left, x2: width - right, y1: Y(v), y2: Y(v), stroke: COLORS.grid }));
    svg.appendChild(shape("line", { class: "tick", x1: left - 4, x2: left, y1: Y(v), y2: Y(v), stroke: COLORS.axis }));
    svg.appendChild(text(left - 6, Y(v) + 4, fmt.tick(v), { anchor: "end" }));
  });
  xTicks.forEach((v) => {
    svg.appendChild(shape("line", { class: "tick", x1: X(v), x2: X(v), y1: top + plotH, y2: top + plotH + 5,
      stroke: COLORS.axis }));
    svg.appendChild(text(X(v), top + plotH + 18, fmt.tick(v), { anchor: "middle" }));
  });
  svg.appendChild(shape("line", { x1: left, x2: left, y1: top - 4, y2: top + plotH, stroke: COLORS.axis }));
  svg.appendChild(shape("line", { x1: left, x2: width - right, y1: top + plotH, y2: top + plotH, stroke: COLORS.axis }));
  svg.appendChild(text(width - right, height - 6, xTitle, { weight: "600", anchor: "end" }));  // the x axis's title
  bands.forEach((b, i) => {  // each band behind its line: the low edge left to right, the high edge back
    if (!b.length) return;
    const edge = [...b.map((p) => `${X(p[0])},${Y(p[1])}`), ...[...b].reverse().map((p) => `${X(p[0])},${Y(p[2])}`)];
    svg.appendChild(shape("polygon", { class: "band", points: edge.join(" "), fill: colors[i], "fill-opacity": 0.15,
      stroke: "none" }));
  });
  series.forEach((s, i) => {
    svg.appendChild(shape("polyline", { points: s.map((p) => `${X(p[0])},${Y(p[1])}`).join(" "), fill: "none",
      stroke: colors[i], "stroke-width": 2, "stroke-dasharray": DASHES[i] || "" }));
    s.forEach((p) => svg.appendChild(shape("circle", {  // every point also as a dot: a one-point series is still seen
      cx: X(p[0]), cy: Y(p[1]), r: s.length > 40 ? 1.5 : 3, fill: colors[i] })));
  });
  if (markX !== undefined) svg.appendChild(shape("line", { x1: X(markX), x2: X(markX), y1: top - 4, y2: top + plotH,
    stroke: COLORS.axis, "stroke-dasharray": 4 }));
  const at = markX !== undefined && markLabel !== undefined && series[0].find((p) => p[0] === markX);
  if (at) {  // the marked point read off the y axis: a guide to it and its value beside the axis
    svg.appendChild(shape("line", { x1: left, x2: X(markX), y1: Y(at[1]), y2: Y(at[1]), stroke: COLORS.axis,
      "stroke-dasharray": 4 }));
    svg.appendChild(shape("circle", { cx: X(markX), cy: Y(at[1]), r: 5, fill: "none", stroke: COLORS.ink,
      "stroke-width": 2 }));
    const below = Y(at[1]) < top + 16, onRight = X(markX) < left + textWidth(markLabel) + 16;
    svg.appendChild(text(onRight ? X(markX) + 10 : left + 6, Y(at[1]) + (below ? 16 : -6), markLabel,
      { weight: "600" }));
  }
  el.replaceChildren(svg);
  el.setAttribute("aria-label", t("chart.lines", { x: plain(xTitle), y: plain(yTitle), x0: fmt.int(x0), x1: fmt.int(x1),
    series: series.map((s, i) => t("chart.series", { name: plain(names[i]), a: fmt.tick(s[0][1]),
      b: fmt.tick(s[s.length - 1][1]) })).join("; ") }));
}
