// The roofline, normalized: for each machine, the share of its matrix-multiply rate a step can keep busy at a given
// arithmetic intensity (FLOPs per byte of weights read), min(1, intensity / ridge). The curves come from the server;
// this only draws them on log scales of both intensity and share, where the memory-bound slope is a straight line
// rising one decade per decade up to the flat compute roof, with both axes ticked and labelled, and the steps being
// compared (prefill, decode) as guides across every curve.

import { COLORS, chartWidth, remember, shape, svgOf, text, textWidth } from "./charts.js";
import { fmt, t } from "./i18n.js";

const LINE_COLORS = [COLORS.bar, COLORS.mark, COLORS.third];
const LINE_DASHES = ["", "7 4", "2 3"];
const pct = (v) => `${v < 0.01 ? +(100 * v).toPrecision(1) : Math.round(100 * v)}%`;
const SHARE_TICKS = [0.0001, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1];

/** machines: [{ name, ridge, roofline: [[intensity, share], …] }]; guides: [{ x, label }];
 * options: { x: axis title, y: axis title } */
export function roofline(el, machines, guides, options) {
  remember(el, () => roofline(el, machines, guides, options));
  const width = chartWidth(el);
  const legendH = 18 * machines.length, top = legendH + 38 + 15 * guides.length, plotH = 170;
  const height = top + plotH + 46;
  const [svg] = svgOf(el, height);
  const xs = machines.flatMap((m) => m.roofline.map((p) => p[0]));
  const lo = Math.min(...xs), hi = Math.max(...xs);
  // the share's axis from the decade below the lowest point drawn (curves and guides) to 1
  const shares = machines.flatMap((m) => [...m.roofline.map((p) => p[1]), ...guides.map((g) => Math.min(1, g.x / m.ridge))]);
  const floor = 10 ** Math.floor(Math.log10(Math.max(1e-4, Math.min(...shares.filter((v) => v > 0)))));
  const yTicks = SHARE_TICKS.filter((v) => v >= floor);
  const left = Math.max(...yTicks.map((v) => textWidth(pct(v)))) + 14, right = 14;
  const X = (x) => left + (Math.log2(x / lo) / Math.log2(hi / lo)) * (width - left - right);
  const Y = (y) => top + plotH - (Math.log10(Math.max(y, floor) / floor) / -Math.log10(floor)) * plotH;

  machines.forEach((m, i) => {  // the legend: each machine's line, its name and ridge
    svg.appendChild(shape("line", { x1: 4, x2: 24, y1: 10 + 18 * i, y2: 10 + 18 * i, stroke: LINE_COLORS[i],
      "stroke-width": 3, "stroke-dasharray": LINE_DASHES[i] }));
    svg.appendChild(text(30, 14 + 18 * i, m.legend));
  });
  svg.appendChild(text(4, legendH + 16, options.y, { weight: "600" }));
  yTicks.forEach((v) => {
    svg.appendChild(shape("line", { x1: left, x2: width - right, y1: Y(v), y2: Y(v), stroke: COLORS.grid }));
    svg.appendChild(shape("line", { class: "tick", x1: left - 4, x2: left, y1: Y(v), y2: Y(v), stroke: COLORS.axis }));
    svg.appendChild(text(left - 6, Y(v) + 4, pct(v), { anchor: "end" }));
  });
  const xTicks = [];
  for (let v = 1; v <= hi; v *= width < 500 ? 16 : 4) if (v >= lo) xTicks.push(v);
  xTicks.filter((v) => X(v) + textWidth(fmt.tick(v)) / 2 <= width).forEach((v) => {
    svg.appendChild(shape("line", { class: "tick", x1: X(v), x2: X(v), y1: top + plotH, y2: top + plotH + 5,
      stroke: COLORS.axis }));
    svg.appendChild(text(X(v), top + plotH + 18, fmt.tick(v), { anchor: "middle" }));
  });
  svg.appendChild(shape("line", { x1: left, x2: left, y1: top - 4, y2: top + plotH, stroke: COLORS.axis }));
  svg.appendChild(shape("line", { x1: left, x2: width - right, y1: top + plotH, y2: top + plotH, stroke: COLORS.axis }));
  svg.appendChild(text(width - right, height - 6, options.x, { weight: "600", anchor: "end" }));

  guides.forEach((g, k) => {  // a step's intensity across every machine, its label above the plot, one row each
    if (g.x < lo || g.x > hi) return;
    const y = legendH + 40 + 15 * k;
    svg.appendChild(shape("line", { x1: X(g.x), x2: X(g.x), y1: y + 3, y2: top + plotH, stroke: COLORS.ink,
      "stroke-dasharray": "3 3" }));
    const w = textWidth(g.label), onRight = X(g.x) + 4 + w < width;
    svg.appendChild(text(onRight ? X(g.x) + 4 : X(g.x) - 4, y, g.label, { anchor: onRight ? "start" : "end",
      weight: "600" }));
  });
  machines.forEach((m, i) => {
    svg.appendChild(shape("polyline", { points: m.roofline.map(([x, y]) => `${X(x)},${Y(y)}`).join(" "),
      fill: "none", stroke: LINE_COLORS[i], "stroke-width": 2.5, "stroke-dasharray": LINE_DASHES[i] }));
    guides.forEach((g) => {
      if (g.x < lo || g.x > hi) return;
      svg.appendChild(shape("circle", { cx: X(g.x), cy: Y(Math.min(1, g.x / m.ridge)), r: 4, fill: LINE_COLORS[i],
        stroke: "#fff", "stroke-width": 1 }));
    });
  });
  el.replaceChildren(svg);
  el.setAttribute("aria-label", t("roofline.aria", { x: options.x, y: options.y,
    machines: machines.map((m) => t("roofline.aria-machine", { name: m.legend })).join("; "),
    guides: guides.map((g) => g.label).join("; ") }));
}
