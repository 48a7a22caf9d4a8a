// §05 The KV cache: the slots filling up, what it weighs, and its two silent bugs run for real (a ring buffer that
// wraps, positions stuck at 0) beside the guarded engine.

import { get, post } from "../lib/api.js";
import { bars, COLORS, rect, remember, svgOf, text } from "../lib/charts.js";
import { byId, debounce, el, q, setRange, tokenSpan } from "../lib/dom.js";
import { fmt, nodes, t } from "../lib/i18n.js";
import { state } from "../lib/state.js";
import { frame, sectionFrame, widget } from "../lib/widget.js";
import strings from "./cache.strings.js";

export { strings };

export const html = sectionFrame("s05", [
  frame("W-cache-fill", `
  <label for="fill-step" data-text="W-cache-fill.step"></label>
  <input id="fill-step" type="range" min="1" max="12" value="1">
  <div class="grid" role="img"></div>`),
  frame("W-cache-memory", `
  <label for="context" data-text="cache.context"></label>
  <input id="context" type="range" min="64" max="2048" step="64" value="2048">
  <div class="chart" role="img"></div>`),
  frame("W-ring-overflow", `
  <label for="ring-prompt" data-text="W-ring-overflow.prompt"></label>
  <input id="ring-prompt" type="text" value="One two three four five">
  <label for="ring-capacity" data-text="W-ring-overflow.capacity"></label>
  <input id="ring-capacity" type="range" min="6" max="16" value="8">
  <button type="button" class="run" data-text="W-ring-overflow.run"></button>
  <div class="slots chart" role="img" data-text-aria="W-ring-overflow.slots-empty"></div>
  <div class="side"><pre class="correct" data-text-aria="W-ring-overflow.aria.correct"></pre><pre class="ring" data-text-aria="W-ring-overflow.aria.ring"></pre></div>`),
  frame("W-position-bug", `
  <button type="button" class="run" aria-pressed="false" data-text="W-position-bug.run"></button>
  <div class="side"><pre class="correct" data-text-aria="W-position-bug.aria.correct"></pre><pre class="buggy" data-text-aria="W-position-bug.aria.buggy"></pre></div>`),
]);

export function mount() {
  // ---- W-cache-fill: the same twelve greedy steps as §04's W-autoregress (one request answers both)
  const fill = widget("W-cache-fill", {
    runsOn: "prompt", follows: ["prompt", "model"],
    load: () => post("/api/autoregress", { prompt: state.prompt, steps: 12 }),
    draw(d) {
      const at = setRange(byId("fill-step"), { max: d.steps.length }), s = d.steps[at - 1];
      slots(q(fill.el, ".grid"), s.cache_pairs_per_layer, d.n_layers, at);
      fill.say(["W-cache-fill.readout", { at, pairs: s.cache_pairs_per_layer, layers: d.n_layers,
        bytes: fmt.int(s.cache_pairs_per_layer * d.kv_bytes_per_token) }]);
    },
  });
  byId("fill-step").addEventListener("input", () => fill.redraw());

  // ---- W-cache-memory: GPT-3's cache for one sequence
  const memory = widget("W-cache-memory", {
    runsOn: "runs-on.gpt3",
    load: async () => ({ at: await get("/api/cache-memory", { context: byId("context").value }),
      full: await get("/api/cache-memory", { context: 2048 }) }),
    draw({ at, full }) {
      bars(q(memory.el, ".chart"), [{ label: t("cache.tokens", { n: at.context }), value: at.gib, text: fmt.gib(at.gib) },
        { label: t("cache.tokens", { n: full.context }), value: full.gib, text: fmt.gib(full.gib), dim: true }],
      t("W-cache-memory.chart"));
      memory.say(["W-cache-memory.readout", { n: at.context, gib: fmt.gib(at.gib), layers: at.n_layers, d: at.d_model }]);
    },
  });
  byId("context").addEventListener("input", debounce(() => memory.run(), 120));

  // ---- W-ring-overflow: on its own prompt, on demand
  const ring = widget("W-ring-overflow", {
    runsOn: "own-prompt", follows: ["model"], auto: false, idle: "not-run",
    load: () => post("/api/ring-overflow", { prompt: byId("ring-prompt").value, capacity: +byId("ring-capacity").value,
      steps: 10 }),
    draw(d) {
      const guard = d.guard === null ? [] : ["\n\n", ...nodes("W-ring-overflow.guard", { capacity: d.capacity }), " ",
        el("code", { textContent: d.guard })];  // the engine's own words
      q(ring.el, ".correct").replaceChildren(...nodes("W-ring-overflow.correct"), " ", tokenSpan(d.correct), ...guard);
      q(ring.el, ".ring").replaceChildren(...nodes("W-ring-overflow.ring", { capacity: d.capacity }), " ", tokenSpan(d.ring));
      ringSlots(q(ring.el, ".slots"), d);
      ring.say(["W-ring-overflow.readout", { over: overwritten(d) }]);
    },
  });
  q(ring.el, ".run").addEventListener("click", () => ring.run());
  for (const id of ["ring-prompt", "ring-capacity"]) byId(id).addEventListener("input", () => ring.outdate("inputs"));

  // ---- W-position-bug: the page's prompt, on demand
  const position = widget("W-position-bug", {
    runsOn: "prompt", follows: ["prompt", "model"], auto: false, idle: "not-run",
    load: () => post("/api/position-bug", { prompt: state.prompt, steps: 8 }),
    draw(d) {
      const list = (ps) => fmt.list(ps.map(String));
      q(position.el, ".correct").replaceChildren(...nodes("W-position-bug.positions", { list: list(d.correct_positions) }),
        "\n", tokenSpan(d.correct));
      q(position.el, ".buggy").replaceChildren(...nodes("W-position-bug.positions", { list: list(d.buggy_positions) }),
        "\n", tokenSpan(d.buggy));
      q(position.el, ".run").setAttribute("aria-pressed", "true");
      position.say([d.correct === d.buggy ? "W-position-bug.same" : "W-position-bug.diverge"]);
    },
  });
  q(position.el, ".run").addEventListener("click", () => position.run());
}

const overwritten = (d) => (d.overwritten_positions.length ? fmt.list(d.overwritten_positions.map(String))
  : t("W-ring-overflow.none"));

// Each layer's K slots and V slots (three layers drawn), the newest pair marked
function slots(box, pairs, layers, at) {
  remember(box, () => slots(box, pairs, layers, at));
  const drawn = Math.min(3, layers);
  const [svg, width] = svgOf(box, drawn * 2 * 22 + 8), labelW = 84, size = Math.min(24, (width - labelW - 4) / Math.max(pairs, 1));
  for (let layer = 0; layer < drawn; layer++) ["K", "V"].forEach((kind, r) => {
    const y = 4 + (layer * 2 + r) * 22;
    svg.appendChild(text(4, y + 15, t("W-cache-fill.row", { layer, kind })));
    for (let j = 0; j < pairs; j++) rect(svg, { x: labelW + j * size, y, width: size - 2, height: 18,
      fill: j === pairs - 1 && at > 1 ? COLORS.mark : kind === "K" ? COLORS.bar : COLORS.third });
  });
  box.replaceChildren(svg);
  box.setAttribute("aria-label", t("W-cache-fill.aria", { pairs, layers, drawn }));
}

// The ring's slots after the run: the position each holds; slots written over more than once marked
function ringSlots(box, d) {
  remember(box, () => ringSlots(box, d));
  const [svg, width] = svgOf(box, 84), size = Math.min(56, (width - 8) / d.capacity);
  svg.appendChild(text(4, 14, t("W-ring-overflow.slots", { capacity: d.capacity, written: d.written, prompt: d.prompt_tokens })));
  d.slots.forEach((p, j) => {
    const over = p !== null && p >= d.capacity;
    rect(svg, { x: 4 + j * size, y: 24, width: size - 4, height: 30, rx: 3, fill: over ? "#f8d7c9" : "#cfe0fb",
      stroke: over ? COLORS.mark : "#8a939e" }, p === null ? "" : `p${p}`);
    svg.appendChild(text(4 + j * size, 72, `${j}`));
  });
  box.replaceChildren(svg);
  box.setAttribute("aria-label", t("W-ring-overflow.slots-aria", { last: d.capacity - 1, slots: fmt.list(d.slots.map((p) => (p === null ? "—" : String(p)))),
    over: overwritten(d) }));
}
