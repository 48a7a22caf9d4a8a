// A strip of steps: one cell per step, in as many rows as the box needs, each cell's kind told by its colour, its
// outline and a glyph inside it (so no kind is told by colour alone), the chosen step framed in ink, step numbers
// under each row, and a legend with each kind's count. A click on a cell picks that step.

import { COLORS, chartWidth, remember, shape, svgOf, text } from "./charts.js";
import { fmt } from "./i18n.js";

const CELL = 24, GAP = 3;

/** items: [kind, …] one per step; kinds: { kind: { fill, stroke, glyph, name (string or parts) } } in the legend's
 * order; options: { chosen: the step framed, onPick(step), axis: the steps' axis title, summary: text alternative } */
export function stepStrip(el, items, kinds, options = {}) {
  remember(el, () => stepStrip(el, items, kinds, options));
  const { chosen, onPick, axis = "", summary = "" } = options;
  const width = chartWidth(el);
  const perRow = Math.max(4, Math.floor((width - 8) / (CELL + GAP) / 4) * 4);  // a multiple of 4: ticks line up
  const rows = Math.ceil(items.length / perRow), rowH = CELL + 22;
  const legend = Object.keys(kinds), legendH = legend.length * 20 + 6;
  const [svg] = svgOf(el, rows * rowH + legendH + (axis ? 18 : 0) + 4);
  items.forEach((kind, i) => {
    const r = Math.floor(i / perRow), c = i % perRow, x = 4 + c * (CELL + GAP), y = 4 + r * rowH;
    const k = kinds[kind];
    const cell = shape("rect", { x, y, width: CELL, height: CELL, rx: 3, fill: k.fill, stroke: k.stroke,
      "stroke-width": 1.5, "data-step": i });
    if (onPick) { cell.style.cursor = "pointer"; cell.addEventListener("click", () => onPick(i)); }
    svg.appendChild(cell);
    const glyph = text(x + CELL / 2, y + 17, k.glyph, { anchor: "middle", weight: "600" });
    glyph.style.pointerEvents = "none";
    svg.appendChild(glyph);
    if (i === chosen) svg.appendChild(shape("rect", { x: x - 2.5, y: y - 2.5, width: CELL + 5, height: CELL + 5,
      rx: 4, fill: "none", stroke: COLORS.ink, "stroke-width": 2.5 }));
    if (c % 4 === 0) svg.appendChild(text(x + CELL / 2, y + CELL + 15, fmt.int(i), { anchor: "middle" }));
  });
  let y = 4 + rows * rowH + 4;
  if (axis) { svg.appendChild(text(4, y + 10, axis, { weight: "600" })); y += 18; }
  legend.forEach((kind) => {
    const k = kinds[kind], n = items.filter((x) => x === kind).length;
    svg.appendChild(shape("rect", { x: 4, y, width: 16, height: 16, rx: 2, fill: k.fill, stroke: k.stroke,
      "stroke-width": 1.5 }));
    svg.appendChild(text(12, y + 12, k.glyph, { anchor: "middle", weight: "600" }));
    svg.appendChild(text(28, y + 13, Array.isArray(k.name) ? [...k.name, { text: ` (${fmt.int(n)})` }]
      : `${k.name} (${fmt.int(n)})`));
    y += 20;
  });
  el.replaceChildren(svg);
  el.setAttribute("aria-label", summary);
}
