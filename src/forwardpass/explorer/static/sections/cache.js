// §05 The KV cache: the slots filling up, what it weighs (GPT-3's formula, and the model on this page), and its two
// silent bugs run for real (a ring buffer that wraps, positions stuck at 0) beside the guarded engine.

import { get, post } from "../lib/api.js";
import { bars, COLORS, lines, remember, shape, svgOf, text, textWidth } from "../lib/charts.js";
import { byId, debounce, q, setRange } from "../lib/dom.js";
import { code, fmt, nodes, piece, t } from "../lib/i18n.js";
import { bytes } from "../lib/prose.js";
import { state } from "../lib/state.js";
import { gap, preset, presets, told, times } from "../lib/told.js";
import { frame, sectionFrame, widget } from "../lib/widget.js";
import strings from "./cache.strings.js";
import { autoregress, chip } from "./loop.js";

export { strings };

export const html = sectionFrame("s05", [
  frame("W-cache-fill", `
  <span class="control"><label for="fill-step" data-text="cache.step"></label>
  <input id="fill-step" type="range" min="1" max="12" value="1"></span>
  <div class="grid" role="img"></div>`),
  frame("W-cache-memory", `
  <span class="control"><label for="context" data-text="cache.context"></label>
  <input id="context" type="range" min="64" max="2048" step="64" value="2048"></span>
  <span class="presets">${preset({ "context": 512 }, "W-cache-memory.preset-512")}${preset({ "context": 2048 }, "W-cache-memory.preset-2048")}</span>
  <div class="chart" role="img"></div>`),
  frame("W-cache-here", `
  <div class="chart per-token" role="img"></div>
  <div class="chart full" role="img"></div>`, { noControl: true }),
  frame("W-ring-overflow", `
  <div class="row"><label for="ring-prompt" data-text="W-ring-overflow.prompt"></label>
  <input id="ring-prompt" type="text" value="One two three four five"></div>
  <span class="control"><label for="ring-capacity" data-text="W-ring-overflow.capacity"></label>
  <input id="ring-capacity" type="range" min="6" max="16" value="8"></span>
  <button type="button" class="run" data-text="W-ring-overflow.run"></button>
  <span class="presets">${preset({ "ring-capacity": 8 }, "W-ring-overflow.preset-8")}${preset({ "ring-capacity": 16 }, "W-ring-overflow.preset-16")}</span>
  <p class="caption"></p>
  <div class="slots chart" role="img" data-text-aria="W-ring-overflow.slots-empty"></div>
  <div class="side"><div class="panel correct" data-text-aria="W-ring-overflow.aria.correct"></div><div class="panel ring" data-text-aria="W-ring-overflow.aria.ring"></div></div>`),
  frame("W-position-bug", `
  <button type="button" class="run" aria-pressed="false" data-text="W-position-bug.run"></button>
  <div class="side"><div class="panel correct" data-text-aria="W-position-bug.aria.correct"></div><div class="panel buggy" data-text-aria="W-position-bug.aria.buggy"></div></div>`),
  `<p class="prose bridge" data-text="bridge-s05"></p>`,
]);

const gib = (x) => fmt.gib(x);
/** a count of bytes, exact and in binary units: 46,080 bytes (45 KiB) */
const sized = (n) => t("cache.bytes-size", { n: fmt.int(n), size: bytes(n) });

export function mount() {
  const fill = mountCacheFill();
  const memory = mountCacheMemory();
  const here = mountCacheHere();
  const ring = mountRingOverflow();
  const position = mountPositionBug();
  for (const w of [fill, here, ring, position]) w.el.dataset.source = "model";  // what each runs on, beside its line
  memory.el.dataset.source = "formula";
}

// ---- W-cache-fill: the same twelve greedy steps as §04's W-autoregress (one request answers both)
function mountCacheFill() {
  const fill = widget("W-cache-fill", {
    runsOn: "prompt", follows: ["prompt", "model"],
    load: autoregress,
    draw(d) {
      const at = setRange(byId("fill-step"), { max: d.steps.length }), s = d.steps[at - 1], p = d.prompt.length;
      const most = d.steps[d.steps.length - 1].cache_pairs_per_layer;
      slots(q(fill.el, ".grid"), { pairs: s.cache_pairs_per_layer, fresh: s.input_tokens, layers: d.n_layers, most });
      const values = { at, t: s.tokens_read, p, k: at - 1, layers: d.n_layers, pairs: s.cache_pairs_per_layer,
        bytes: sized(s.cache_pairs_per_layer * d.kv_bytes_per_token), per: sized(d.kv_bytes_per_token),
        dtype: code(d.kv_dtype), piece: piece(s.piece), next: at + 1 };
      const exact = s.cache_pairs_per_layer === s.tokens_read;  // what the cache holds against what was read
      fill.say([exact ? "W-cache-fill.readout" : "W-cache-fill.broken", values], gap(),
        [at === d.steps.length ? "W-cache-fill.pending-last" : "W-cache-fill.pending", values]);
      const bad = d.steps.find((x) => x.cache_pairs_per_layer !== x.tokens_read);
      told(fill, bad ? ["W-cache-fill.told-broken", { at: bad.step + 1, pairs: bad.cache_pairs_per_layer,
        t: bad.tokens_read }] : ["W-cache-fill.told", { steps: d.steps.length, first: d.steps[0].cache_pairs_per_layer,
        last: most, p, layers: d.n_layers }],
      d.reference_kv_dtype !== d.kv_dtype && ["W-cache-fill.reference", { ref: code(d.reference_kv_dtype),
        dtype: code(d.kv_dtype) }]);
    },
  });
  byId("fill-step").addEventListener("input", () => fill.redraw());
  return fill;
}

// ---- W-cache-memory: GPT-3's cache for one sequence; the article's two states from the same formula
function mountCacheMemory() {
  const context = byId("context");
  const memory = widget("W-cache-memory", {
    runsOn: "runs-on.gpt3",
    load: async () => {
      const [at, full, quarter] = await Promise.all([context.value, 2048, 512].map((c) => get("/api/cache-memory",
        { context: c })));
      return { at, full, quarter };
    },
    draw({ at, full, quarter }) {
      lines(q(memory.el, ".chart"), [at.series], { names: [t("W-cache-memory.series")], x: t("cache.context-axis"),
        y: t("W-cache-memory.axis"), markX: at.context, markLabel: gib(at.gib) });
      memory.say(["W-cache-memory.readout", { n: at.context, gib: gib(at.gib), layers: at.n_layers, d: at.d_model,
        b: at.element_bytes }]);
      told(memory, [quarter.bytes * 4 === full.bytes ? "W-cache-memory.told" : "W-cache-memory.told-ratio", {
        full_n: full.context, full: gib(full.gib), q_n: quarter.context, quarter: gib(quarter.gib), d: full.d_model,
        layers: full.n_layers, share: fmt.pct(quarter.bytes / full.bytes) }]);
    },
  });
  presets(memory.el);
  context.addEventListener("input", debounce(() => memory.run(), 120));
  return memory;
}

// ---- W-cache-here: the model on this page, from its configuration and the engine's KV dtype
function mountCacheHere() {
  const here = widget("W-cache-here", {
    runsOn: "W-cache-here.runs-on", follows: ["model"],
    load: () => get("/api/kv-here", {}, { model: true }),
    draw(d) {
      const m = d.model, g = d.gpt3, name = state.info ? state.info.display_name : m.name;
      bars(q(here.el, ".chart.per-token"), [
        { label: name, value: m.per_token, text: t("cache.bytes", { n: fmt.int(m.per_token) }) },
        { label: t("W-cache-here.gpt3"), value: g.per_token, text: t("cache.bytes", { n: fmt.int(g.per_token) }), dim: true },
      ], t("W-cache-here.per-token"), { axis: t("W-cache-here.bytes-axis") });
      bars(q(here.el, ".chart.full"), [
        { label: t("W-cache-here.at", { name, n: m.context }), value: m.full_context_gib, text: gib(m.full_context_gib) },
        { label: t("W-cache-here.at", { name: t("W-cache-here.gpt3"), n: g.context }), value: g.full_context_gib,
          text: gib(g.full_context_gib), dim: true },
      ], t("W-cache-here.full"), { axis: t("W-cache-here.gib-axis") });
      const values = { model: name, layers: m.n_layers, kv: m.n_kv_heads, heads: m.n_heads, hd: m.head_dim,
        b: m.element_bytes, dtype: code(m.dtype), per: fmt.int(m.per_token), size: bytes(m.per_token),
        gpt: fmt.int(g.per_token), gsize: bytes(g.per_token), ratio: times(d.ratio), ctx: m.context,
        full: gib(m.full_context_gib), gctx: g.context, gfull: gib(g.full_context_gib), pool: fmt.int(m.pool_per_token),
        g: times(m.n_heads / m.n_kv_heads) };
      here.say(["W-cache-here.readout", values]);
      told(here, [["W-cache-here.full-context", values],
        [m.pool_per_token === m.per_token ? "W-cache-here.pool" : "W-cache-here.pool-differs", values]],
      [[m.n_kv_heads < m.n_heads ? "W-cache-here.grouped" : "W-cache-here.every-head", values],
        m.sliding_layers > 0 && ["W-cache-here.sliding", { n: m.sliding_layers, layers: m.n_layers, w: m.window }]]);
    },
  });
  return here;
}

// ---- W-ring-overflow: on its own prompt, on demand; every verdict from what the run did
function mountRingOverflow() {
  const capacity = byId("ring-capacity");
  const ring = widget("W-ring-overflow", {
    runsOn: "own-prompt", follows: ["model"], auto: false, first: true, idle: "not-run",
    load: () => post("/api/ring-overflow", { prompt: byId("ring-prompt").value, capacity: +capacity.value, steps: 10 }),
    draw: (d) => drawRing(ring, d),
  });
  q(ring.el, ".run").addEventListener("click", () => ring.run());
  presets(ring.el, () => ring.run());  // a preset sets the capacity and runs all three at once
  for (const id of ["ring-prompt", "ring-capacity"]) byId(id).addEventListener("input", () => ring.outdate("inputs"));
  return ring;
}

// ---- W-position-bug: the page's prompt, on demand
function mountPositionBug() {
  const position = widget("W-position-bug", {
    runsOn: "prompt", follows: ["prompt", "model"], auto: false, first: true, idle: "not-run",
    load: () => post("/api/position-bug", { prompt: state.prompt, steps: 12 }),
    draw: (d) => drawPositions(position, d),
  });
  q(position.el, ".run").addEventListener("click", () => position.run());
  return position;
}

/** chips for a generation, the first token where it parts from the other one outlined; `wrong`: the generation
 * that went wrong, the tokens after that one marked too */
function parted(pieces, at, wrong = false) {
  return pieces.map((p, i) => chip(p, at === null || i < at ? "generated" : i === at ? "parts" : wrong ? "off" : "generated"));
}

/** the numbers in the engine's refusal (kv_cache.py), for the Chinese page's gloss of it */
function guardSays(message, capacity) {
  const m = /sequence (\d+) would hold (\d+) tokens but the cache has room for (\d+)/.exec(message);
  return m ? { seq: m[1], need: m[2], room: m[3] } : { seq: 0, need: capacity + 1, room: capacity };
}

function drawRing(w, d) {
  const over = d.overwrites.length > 0, first = d.overwrites[0], diff = d.first_difference;
  // the guarded cache: its text is the roomy cache's up to the pair it refused to write (the token at that position
  // was chosen, the next one could not be); with room, the whole text and no error
  const guarded = d.guard === null ? d.correct_pieces : d.correct_pieces.slice(0, d.refused.position - d.prompt_tokens + 1);
  const guard = d.guard === null
    ? nodes("W-ring-overflow.room", { capacity: d.capacity, written: d.written })
    : nodes("W-ring-overflow.guard", { capacity: d.capacity, position: d.refused.position, piece: piece(d.refused.piece),
      message: code(d.guard), ...guardSays(d.guard, d.capacity) });  // the engine's own words, as code, said around in the page's language
  q(w.el, ".correct").replaceChildren(...(d.guard === null ? [] : [label("W-ring-overflow.roomy"),
    ...parted(d.correct_pieces, diff)]), label("W-ring-overflow.guarded", { capacity: d.capacity }),
  ...parted(guarded, d.guard === null ? diff : null), para(guard));
  q(w.el, ".ring").replaceChildren(label("W-ring-overflow.ring", { capacity: d.capacity }),
    ...parted(d.ring_pieces, diff, true));
  q(w.el, ".caption").replaceChildren(...nodes("W-ring-overflow.slots", { capacity: d.capacity, written: d.written,
    prompt: d.prompt_tokens }));
  ringSlots(q(w.el, ".slots"), d);
  const lost = fmt.list(d.overwrites.map((o) => String(o.lost)), true);
  const verdict = !over
    ? ["W-ring-overflow.fits", { written: d.written, capacity: d.capacity }]
    : ["W-ring-overflow.wrapped", { slot: first.slot, position: first.position, piece: piece(first.piece),
      lost: first.lost, lost_piece: piece(first.lost_piece), count: d.overwrites.length, all: lost }];
  const refused = !over ? null : d.guard !== null
    ? ["W-ring-overflow.refused", { position: d.refused.position }] : ["W-ring-overflow.not-refused", {}];
  const text = !over ? null : diff === null ? ["W-ring-overflow.same-text", { steps: d.steps }]
    : ["W-ring-overflow.parts", { k: diff + 1 }];
  w.say(verdict, ...(text ? [gap(), text] : []), ...(refused ? [gap(), refused] : []));
}

function drawPositions(w, d) {
  const k = d.first_difference;
  q(w.el, ".correct").replaceChildren(label("W-position-bug.correct", { list: fmt.list(d.correct_positions.map(String)) }),
    ...parted(d.correct_pieces, k));
  q(w.el, ".buggy").replaceChildren(label("W-position-bug.positions", { list: fmt.list(d.buggy_positions.map(String)) }),
    ...parted(d.buggy_pieces, k, true));
  q(w.el, ".run").setAttribute("aria-pressed", "true");
  const values = { n: d.correct_pieces.length, k: k === null ? 0 : k + 1, pb: fmt.fixed(d.buggy_perplexity, 1),
    pc: fmt.fixed(d.correct_perplexity, 1) };
  if (k === null) return w.say(["W-position-bug.same", values]);
  w.say(["W-position-bug.diverge", { ...values, bug: piece(d.buggy_pieces[k]), right: piece(d.correct_pieces[k]) }],
    gap(), [d.buggy_perplexity > d.correct_perplexity ? "W-position-bug.worse" : "W-position-bug.not-worse", values]);
}

const label = (key, values) => {
  const p = document.createElement("p");
  p.className = "panel-name";
  p.append(...nodes(key, values));
  return p;
};
const para = (children) => {
  const p = document.createElement("p");
  p.className = "guard";
  p.append(...children);
  return p;
};

// Each layer's K slots and V slots (three layers drawn), the pairs written at this step marked, positions ticked
function slots(box, { pairs, fresh, layers, most }) {
  remember(box, () => slots(box, { pairs, fresh, layers, most }));
  const drawn = Math.min(3, layers), rowH = 22;
  const rows = [];
  for (let layer = 0; layer < drawn; layer++) for (const kind of ["K", "V"]) rows.push({ layer, kind });
  const labels = rows.map((r) => t("W-cache-fill.row", { block: r.layer + 1, kind: r.kind }));
  const labelW = Math.max(...labels.map(textWidth)) + 12;
  const top = 4, axisY = top + rows.length * rowH + 2, height = axisY + 62;
  const [svg, width] = svgOf(box, height), size = Math.min(24, (width - labelW - 8) / Math.max(most, 1));
  rows.forEach((r, i) => {
    const y = top + i * rowH;
    svg.appendChild(text(4, y + 14, labels[i]));
    for (let j = 0; j < pairs; j++) svg.appendChild(shape("rect", { x: labelW + j * size, y, width: Math.max(1, size - 2),
      height: 18, fill: j >= pairs - fresh ? COLORS.mark : r.kind === "K" ? COLORS.bar : COLORS.third,
      "data-new": String(j >= pairs - fresh), "data-layer": r.layer, "data-kind": r.kind }));
  });
  const every = [1, 2, 5, 10, 20].find((s) => s * size >= 24) || 50;  // position ticks at least 24 px apart
  for (let j = 0; j < most; j += every) {
    const x = labelW + j * size + (size - 2) / 2;
    svg.appendChild(shape("line", { class: "tick", x1: x, x2: x, y1: axisY, y2: axisY + 5, stroke: COLORS.axis }));
    svg.appendChild(text(x, axisY + 18, String(j), { anchor: "middle" }));
  }
  svg.appendChild(shape("line", { x1: labelW, x2: labelW + most * size, y1: axisY, y2: axisY, stroke: COLORS.axis }));
  svg.appendChild(text(labelW + most * size, axisY + 36, t("W-cache-fill.axis"), { anchor: "end", weight: "600" }));
  svg.appendChild(text(4, axisY + 56, t("W-cache-fill.drawn", { drawn, layers })));  // which blocks the rows are
  box.replaceChildren(svg);
  box.setAttribute("aria-label", t("W-cache-fill.aria", { pairs, layers, drawn, fresh }));
}

// The ring's slots after the run: the position each holds, slots written over marked; rows wrap on a narrow screen
function ringSlots(box, d) {
  remember(box, () => ringSlots(box, d));
  const width = Math.max(260, Math.floor(box.clientWidth || 560));
  const fit = Math.max(1, Math.floor((width - 8) / 46)), rowsN = Math.ceil(d.capacity / fit);
  const perRow = Math.ceil(d.capacity / rowsN), size = Math.min(56, (width - 8) / perRow), rowH = 56;
  const [svg] = svgOf(box, 4 + rowsN * rowH + 18);
  d.slots.forEach((p, j) => {
    const x = 4 + (j % perRow) * size, y = 4 + Math.floor(j / perRow) * rowH;
    const over = p !== null && p >= d.capacity;
    const g = shape("g", { class: "slot", "data-slot": j, "data-position": p === null ? "" : p });
    g.appendChild(shape("rect", { x, y, width: size - 4, height: 30, rx: 3, fill: over ? "#fbe0cf" : "#dceefa",
      stroke: over ? COLORS.mark : COLORS.dim, "stroke-width": over ? 2 : 1 }));
    g.appendChild(text(x + (size - 4) / 2, y + 19, p === null ? "—" : `p${p}`, { anchor: "middle", weight: over ? "700" : "400" }));
    svg.appendChild(g);
    svg.appendChild(shape("line", { class: "tick", x1: x + (size - 4) / 2, x2: x + (size - 4) / 2, y1: y + 30, y2: y + 35,
      stroke: COLORS.axis }));
    svg.appendChild(text(x + (size - 4) / 2, y + 48, String(j), { anchor: "middle" }));
  });
  svg.appendChild(text(4 + perRow * size - 4, 4 + rowsN * rowH + 12, t("W-ring-overflow.slot-axis"),
    { anchor: "end", weight: "600" }));
  box.replaceChildren(svg);
  box.setAttribute("aria-label", t("W-ring-overflow.slots-aria", { last: d.capacity - 1,
    slots: fmt.list(d.slots.map((p) => (p === null ? "—" : String(p)))),
    over: d.overwritten_positions.length ? fmt.list(d.overwritten_positions.map(String)) : t("W-ring-overflow.none") }));
}
