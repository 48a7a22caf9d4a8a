// The paged KV pool as a grid of blocks, one engine step at a time: each block filled with the request that holds it
// (its number written in it), a block several requests share outlined thick and marked ×n, a free block empty, and a
// free block that still holds a prefix the cache can hand out again outlined dashed. Every mark has an outline dark
// enough to see (≥ 3:1 on white); fills are light, so the ink numbers on them keep their contrast.

import { COLORS, chartWidth, remember, shape, svgOf, text } from "./charts.js";
import { t } from "./i18n.js";

// light fills, one per request (cycling): the number in each block says which request it is
export const FILLS = ["#fbe0cf", "#d9efe7", "#f6e7b0", "#e8d9f1", "#f9d5e5", "#e3e8ee", "#dcebc4", "#f3dcc0"];
export const SHARED = "#cfe6f5";
const CELL = 30, GAP = 4;

/** step: { owners: [-1 | request | [requests]], cached_free: [block] } */
export function pool(el, step) {
  remember(el, () => pool(el, step));
  const n = step.owners.length, width = chartWidth(el);
  const cols = Math.max(4, Math.min(16, Math.floor((width - 4) / (CELL + GAP))));
  const rows = Math.ceil(n / cols);
  const [svg] = svgOf(el, rows * (CELL + GAP) + 4);
  const cached = new Set(step.cached_free);
  step.owners.forEach((owner, b) => {
    const x = 2 + (b % cols) * (CELL + GAP), y = 2 + Math.floor(b / cols) * (CELL + GAP);
    const shared = Array.isArray(owner), free = owner === -1;
    const g = shape("g", { "data-block": b, "data-owner": free ? "free" : shared ? "shared" : owner });
    g.appendChild(shape("rect", { x, y, width: CELL, height: CELL, rx: 3,
      fill: free ? "#ffffff" : shared ? SHARED : FILLS[owner % FILLS.length],
      stroke: shared ? COLORS.bar : free ? COLORS.dim : COLORS.axis, "stroke-width": shared ? 3 : 1,
      "stroke-dasharray": free && cached.has(b) ? "4 3" : "" }));
    if (!free) g.appendChild(text(x + CELL / 2, y + CELL / 2 + 4, shared ? `×${owner.length}` : String(owner + 1),
      { anchor: "middle", weight: shared ? "700" : "400" }));
    svg.appendChild(g);
  });
  el.replaceChildren(svg);
  const used = step.owners.filter((o) => o !== -1).length, sharedBlocks = step.owners.filter(Array.isArray).length;
  el.setAttribute("aria-label", t("pool.aria", { n, used, shared: sharedBlocks, free: n - used, cached: cached.size }));
}
