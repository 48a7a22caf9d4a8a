// §04's grouped columns: two series per step drawn side by side on one value axis (naive beside cached). The numbered
// prose and the presets every section shares are in told.js.

import { COLORS, remember, shape, svgOf, text, textWidth, ticks } from "./charts.js";
import { fmt } from "./i18n.js";

/** Grouped columns: for each group (a step) one column per series, every column on the same value axis from 0,
 * ticked and labelled (tick marks are lines of class "tick"), so two values draw heights in their own proportion.
 *   options: { groups: [x label], series: [{ name, values, color }], x: "x title", y: "y title with its unit",
 *              mark: index of the group to outline, tick: value → label, aria: the chart's text alternative }
 * Each column carries data-series, data-group and data-value. */
export function columns(el, options) {
  remember(el, () => columns(el, options));
  const { groups, series, x: xTitle, y: yTitle, mark, tick = fmt.tick, aria } = options;
  const all = series.flatMap((s) => s.values);
  const yTicks = ticks(0, Math.max(...all, 1e-12), 5, true), yMax = yTicks[yTicks.length - 1];
  const legendH = 18 * series.length, top = legendH + 26, plotH = 160, height = top + plotH + 46;
  const [svg, width] = svgOf(el, height);
  const left = Math.max(...yTicks.map((v) => textWidth(tick(v)))) + 14, right = 8;
  const groupW = (width - left - right) / groups.length;
  const barW = Math.max(3, Math.min(18, (groupW - 4) / series.length));
  const Y = (v) => top + plotH - (v / yMax) * plotH;
  series.forEach((s, i) => {  // the legend: a swatch and the series' name in ink
    svg.appendChild(shape("rect", { x: 4, y: 3 + 18 * i, width: 16, height: 12, fill: s.color }));
    svg.appendChild(text(26, 14 + 18 * i, s.name));
  });
  svg.appendChild(text(4, legendH + 16, yTitle, { weight: "600" }));  // the value axis's title, above it
  yTicks.forEach((v) => {
    svg.appendChild(shape("line", { x1: left, x2: width - right, y1: Y(v), y2: Y(v), stroke: COLORS.grid }));
    svg.appendChild(shape("line", { class: "tick", x1: left - 4, x2: left, y1: Y(v), y2: Y(v), stroke: COLORS.axis }));
    svg.appendChild(text(left - 6, Y(v) + 4, tick(v), { anchor: "end" }));
  });
  const every = Math.ceil(22 / groupW);  // group labels at least 22 px apart
  groups.forEach((label, g) => {
    const x0 = left + g * groupW + (groupW - barW * series.length) / 2;
    if (g === mark) svg.appendChild(shape("rect", { class: "marked", x: left + g * groupW + 1, y: top - 4,
      width: groupW - 2, height: plotH + 4, fill: "none", stroke: COLORS.ink, "stroke-dasharray": "4 3" }));
    series.forEach((s, i) => {
      const v = s.values[g];
      svg.appendChild(shape("rect", { x: x0 + i * barW, y: Y(v), width: barW - 1, height: Math.max(0, Y(0) - Y(v)),
        fill: s.color, "data-series": i, "data-group": g, "data-value": v }));
    });
    if (g % every === 0 || g === mark) {
      const cx = left + (g + 0.5) * groupW;
      svg.appendChild(shape("line", { class: "tick", x1: cx, x2: cx, y1: top + plotH, y2: top + plotH + 5,
        stroke: COLORS.axis }));
      svg.appendChild(text(cx, top + plotH + 18, label, { anchor: "middle", weight: g === mark ? "700" : "400" }));
    }
  });
  svg.appendChild(shape("line", { x1: left, x2: left, y1: top - 4, y2: top + plotH, stroke: COLORS.axis }));
  svg.appendChild(shape("line", { x1: left, x2: width - right, y1: top + plotH, y2: top + plotH, stroke: COLORS.axis }));
  svg.appendChild(text(width - right, height - 6, xTitle, { weight: "600", anchor: "end" }));
  el.replaceChildren(svg);
  if (aria) el.setAttribute("aria-label", aria);
}
