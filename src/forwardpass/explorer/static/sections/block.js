// §01–§02 Inside a block: fork and merge, what attention and the FFN each read, every head's attention map, attention
// opened up (W-mechanism, one block stage by stage, is mechanism.js's), where a block's weights live, and where the
// norm sits.

import { get, post } from "../lib/api.js";
import { bars, chartWidth, COLORS, remember, shape, svgOf, text, textWidth } from "../lib/charts.js";
import { arrow, box, FILLS, path, plus } from "../lib/diagram.js";
import { byId, debounce, q, row, setRange, stepper } from "../lib/dom.js";
import { heatmaps } from "../lib/heatmap.js";
import { fmt, lang, nodes, piece, pieceLabel, t } from "../lib/i18n.js";
import { on, state } from "../lib/state.js";
import { preset, presets, told } from "../lib/told.js";
import { measure } from "../lib/tokenbars.js";
import { frame, sectionFrame, widget } from "../lib/widget.js";
import strings from "./block.strings.js";
import { widgetHtml as mechanism } from "./mechanism.js";

export { strings };

const picker = (prefix) => `
  <span class="control"><label for="${prefix}-token" data-text="block.token"></label>
    <select id="${prefix}-token" data-token></select></span>
  <span class="control"><label for="${prefix}-layer" data-text="block.layer"></label>
    <input id="${prefix}-layer" type="range" min="1" max="1" value="1"></span>
  <span class="control"><label for="${prefix}-head" data-text="block.head"></label>
    <input id="${prefix}-head" type="range" min="1" max="1" value="1"></span>`;

export const html = sectionFrame("s01", [
  frame("W-block-steps", `
  <div class="stepper">
    <button type="button" class="prev" data-text-aria="W-block-steps.prev">◀</button>
    <button type="button" class="next" data-text-aria="W-block-steps.next">▶</button>
  </div>
  <div class="figure fork" role="img"></div>
  <div class="chart" role="img"></div>`),
  mechanism,  // W-mechanism (sections/mechanism.js): one of these blocks opened on one token
  frame("W-reach", `${picker("reach")}
  <div class="figure fan" role="img"></div>`),
  frame("W-attention-map", `
  <span class="control"><label for="map-layer" data-text="block.layer"></label>
    <input id="map-layer" type="range" min="1" max="1" value="1"></span>
  <div class="figure heatmaps" id="attention-maps" role="img"></div>
  <p class="map-detail" data-text="W-attention-map.hint"></p>`),
  frame("W-attention", `${picker("att")}
  <table class="attention"><caption data-text="W-attention.caption"></caption><thead></thead><tbody></tbody></table>`),
  frame("W-split", `
  <span class="control"><label for="split-d"><code>d_model</code></label>
    <input id="split-d" type="range" min="64" max="12288" step="64" value="768"></span>
  <div class="presets" role="group" data-text-aria="W-split.presets">
    ${preset({ "split-d": 768 }, "W-split.preset.768")}
    ${preset({ "split-d": 64 }, "W-split.preset.64")}
  </div>
  <div class="chart" role="img"></div>`),
  frame("W-norm", `
  <fieldset><legend data-text="W-norm.legend"></legend>
    <label><input type="radio" name="norm" value="pre" checked> <span data-text="W-norm.pre"></span></label>
    <label><input type="radio" name="norm" value="post"> <span data-text="W-norm.post"></span></label>
  </fieldset>
  <div class="figure placement" role="img"></div>`),
  `<p class="prose bridge" data-text="bridge-s01"></p>`,
]);

export function mount() {
  spanSliders();
  const steps = mountBlockSteps();
  const reach = mountReach();
  const map = mountAttentionMap(openRow);
  const attention = mountAttention();
  /** the map's clicked row, opened in the table: the same block, head and query token (the server's indexes, from 0;
   * the sliders count from 1) */
  function openRow(layer, head, token) {
    setRange(byId("att-layer"), { value: layer + 1 });
    setRange(byId("att-head"), { value: head + 1 });
    pending.att = token;
    attention.run();
    attention.el.scrollIntoView({ behavior: "smooth", block: "start" });
  }
  const split = mountSplit();
  const norm = mountNorm();
  // what each runs on, seen at a glance: the loaded model or a formula on a fixed shape
  const sources = { model: [steps, reach, map, attention, norm], formula: [split] };
  for (const [source, ws] of Object.entries(sources)) ws.forEach((w) => { w.el.dataset.source = source; });
}

// Blocks and heads are numbered from 1 wherever the reader sees them (the sliders, labels, readouts, prose); the
// server counts from 0 (its `layer` and `head`), so a request sends the slider's value - 1 and a result's index is
// shown + 1.
function spanSliders() {
  let first = true;
  on("model", () => {  // the block and head sliders span the page's model
    const { n_layers: layers, n_heads: heads } = state.info.config;
    for (const p of ["reach", "att"]) {
      setRange(byId(`${p}-layer`), { min: 1, max: layers });
      setRange(byId(`${p}-head`), { min: 1, max: heads });
    }
    // the maps open on block 3, where (on the default model) heads already differ: most on the first token, one on
    // the token before
    setRange(byId("map-layer"), { min: 1, max: layers, ...(first ? { value: Math.min(3, layers) } : {}) });
    first = false;
  });
}

// ---- W-block-steps: the block's seven steps on the fork picture; the stream's length in and out of the blocks
function mountBlockSteps() {
  const steps = widget("W-block-steps", {
    runsOn: "prompt", follows: ["prompt", "model"],
    load: () => post("/api/block-steps", { prompt: state.prompt }),
    draw(d) {
      // a block that normalizes each branch's output before the add (Gemma) says so at its two sublayer steps
      const stepKey = (i) => `W-block-steps.step.${i}${d.norm_after && (i === 2 || i === 5) ? ".after" : ""}`;
      const at = walk.at(), names = d.steps.map((_, i) => t(stepKey(i))), first = d.blocks[0];
      const every = Math.max(1, Math.ceil(d.blocks.length / 10));
      bars(q(steps.el, ".chart"), d.blocks.filter((b, i) => i % every === 0 || i === d.blocks.length - 1).map((b) => ({
        label: t("W-block-steps.bar", { b: b.block + 1 }), value: b.stream_out,
        text: t("W-block-steps.bar-text", { a: b.stream_in.toFixed(1), b: b.stream_out.toFixed(1) }) })),
      t("W-block-steps.chart"), { axis: t("W-block-steps.axis") });
      fork(q(steps.el, ".fork"), at, first, d.norm_after);
      const extra = at === 3 ? [["W-block-steps.added.attention", { a: first.attention_added.toFixed(2) }]]
        : at === 6 ? [["W-block-steps.added.ffn", { f: first.ffn_added.toFixed(2), out: first.stream_out.toFixed(2) }]] : [];
      steps.say(["W-block-steps.readout", { at: at + 1, n: names.length, step: names[at] }], ...extra);
      const last = d.blocks[d.blocks.length - 1];
      told(steps, ["W-block-steps.told", { in0: first.stream_in.toFixed(1), a0: first.attention_added.toFixed(1),
        f0: first.ffn_added.toFixed(1), last: last.block + 1, out: last.stream_out.toFixed(1), n: d.blocks.length }]);
    },
  });
  const walk = stepper(steps.el, () => (steps.data ? steps.data.steps.length : 1), () => steps.redraw());
  return steps;
}

// ---- W-reach: a fan of one head's real weights from the picked token, against the FFN's single line
function mountReach() {
  const reach = widget("W-reach", {
    runsOn: "prompt", follows: ["prompt", "model"],
    load: () => choose("reach", (n) => n - 1, "/api/reach"),
    draw(d) {
      tokenMenu(byId("reach-token"), d.tokens, d.token);
      fan(q(reach.el, ".fan"), d, (i) => { byId("reach-token").value = i; reach.run(); });
      const best = d.attention.indexOf(Math.max(...d.attention)), sum = d.attention.reduce((a, b) => a + b, 0);
      reach.say(["W-reach.readout", { n: d.token + 1, keep: d.token, piece: piece(d.pieces[best]),
        w: d.attention[best].toFixed(3) }]);
      told(reach, ["W-reach.told", { piece: piece(d.pieces[d.token]), i: d.token, count: d.attention.length,
        sum: sum.toFixed(3), best: piece(d.pieces[best]), w: d.attention[best].toFixed(3), layer: d.layer + 1, head: d.head + 1,
        ffn: d.ffn_reads.length }]);
    },
  });
  wire(reach, "reach");
  return reach;
}

// ---- W-attention-map: every head of one layer, T × T; a click opens that row in W-attention's table (openRow)
function mountAttentionMap(openRow) {
  const map = widget("W-attention-map", {
    runsOn: "prompt", follows: ["prompt", "model"],
    load: () => post("/api/attention-map", { prompt: state.prompt, layer: +byId("map-layer").value - 1 }),
    draw(d) {
      const figure = byId("attention-maps");
      const drawMaps = () => heatmaps(figure, d.heads, { title: (h) => t("W-attention-map.head", { h: h + 1 }),
        legend: t("W-attention-map.legend"), minCell: chartWidth(figure) < 600 ? 8 : 14 });
      remember(figure, drawMaps);
      drawMaps();
      figure.setAttribute("aria-label", t("W-attention-map.aria", { layer: d.layer + 1, heads: d.n_heads, t: d.pieces.length }));
      const gap = Math.max(...d.heads.flatMap((h) => h.map((r) => Math.abs(r.reduce((a, b) => a + b, 0) - 1))));
      map.say(["W-attention-map.readout", { layer: d.layer + 1, heads: d.n_heads, kv: d.n_kv_heads, t: d.pieces.length,
        gap: gap.toExponential(1) }]);
      // the last row of every map: where the last token looks, head by head
      const last = d.pieces.length - 1, count = { first: 0, previous: 0, self: 0, other: 0 };
      d.heads.forEach((h) => {
        const r = h[last], top = r.indexOf(Math.max(...r));
        count[last > 0 && top === 0 ? "first" : top === last ? "self" : top === last - 1 ? "previous" : "other"]++;
      });
      told(map, ["W-attention-map.told", { piece: piece(d.pieces[last]), n: d.n_heads, first: count.first,
        previous: count.previous, self: count.self, other: count.other, p0: piece(d.pieces[0]) }]);
    },
  });
  byId("map-layer").addEventListener("input", debounce(() => map.run(), 150));
  const figure = byId("attention-maps");
  const cellOf = (e) => e.target.closest("rect[data-q]");
  const detail = (c) => {
    const d = map.data, [h, qi, k] = ["head", "q", "k"].map((a) => +c.dataset[a]);
    q(map.el, ".map-detail").replaceChildren(...nodes("W-attention-map.detail", { h: h + 1, q: qi, k,
      qp: piece(d.pieces[qi]), kp: piece(d.pieces[k]), w: (+c.dataset.w).toFixed(4) }));
  };
  figure.addEventListener("pointermove", (e) => { const c = cellOf(e); if (c && map.data) detail(c); });
  figure.addEventListener("click", (e) => {
    const c = cellOf(e);
    if (!c || !map.data) return;
    detail(c);
    figure.querySelectorAll("rect.picked").forEach((r) => r.remove());
    const g = c.closest("g.head"), cell = +c.getAttribute("width"), y = +c.getAttribute("y");
    const frameRect = g.querySelector("rect[fill=none]");
    g.appendChild(shape("rect", { class: "picked", x: frameRect.getAttribute("x"), y, width: frameRect.getAttribute("width"),
      height: cell, fill: "none", stroke: COLORS.mark, "stroke-width": 2 }));
    openRow(map.data.layer, +c.dataset.head, +c.dataset.q);
  });
  return map;
}

// ---- W-attention: one query against every key, step by step
function mountAttention() {
  const attention = widget("W-attention", {
    runsOn: "prompt", follows: ["prompt", "model"],
    load: () => choose("att", (n) => Math.floor(n / 2), "/api/attention"),  // a middle token: the mask has work
    draw(d) {
      tokenMenu(byId("att-token"), d.tokens, d.token);
      const cols = ["key", "dot", "scaled", "mask", "weight"];
      const heads = cols.map((c) => t(`W-attention.col.${c}`, { scale: d.scale.toFixed(4) }));
      q(attention.el, "thead").replaceChildren(row(heads, heads, "th"));
      q(attention.el, "tbody").replaceChildren(...d.pieces.map((p, j) => {
        const mask = d.allowed[j] ? "W-attention.kept" : j > d.token ? "W-attention.later" : "W-attention.window";
        const tr = row([[{ text: `${j}: ` }, { text: pieceLabel(p), tag: "tok" }], d.dots[j].toFixed(3),
          d.scaled[j].toFixed(3), t(mask), d.weights[j].toFixed(4)], heads);
        if (j === d.token) tr.className = "current";
        else if (!d.allowed[j]) tr.className = "masked";
        return tr;
      }));
      const best = d.weights.indexOf(Math.max(...d.weights));
      attention.say(["W-attention.readout", { layer: d.layer + 1, head: d.head + 1, kv: d.kv_head + 1, piece: piece(d.pieces[d.token]),
        hd: d.head_dim, scale: d.scale.toFixed(4), masked: d.allowed.filter((a) => !a).length,
        best: piece(d.pieces[best]), w: d.weights[best].toFixed(3), out: d.output_head.join(", "),
        norm: d.output_norm.toFixed(2) }]);
    },
  });
  wire(attention, "att");
  return attention;
}

// ---- W-split: 12d² per block, the FFN's 8d² two thirds at any width (arithmetic, no model)
function mountSplit() {
  const split = widget("W-split", {
    runsOn: "W-split.runs-on", follows: ["model"],
    load: () => get("/api/split", { d: byId("split-d").value }),
    draw(d) {
      bars(q(split.el, ".chart"), [{ label: t("W-split.attention"), value: d.attention, text: fmt.int(d.attention) },
        { label: t("W-split.ffn"), value: d.ffn, text: fmt.int(d.ffn), mark: true }], t("W-split.chart", { d: d.d_model }),
      { axis: t("W-split.axis") });
      split.say(["W-split.readout", { d: d.d_model, block: fmt.int(d.block), share: fmt.pct(d.ffn_share) }]);
      const p = d.block_parts, g = d.gpt2_small;
      told(split, ["W-split.told", { d: d.d_model, att: fmt.int(d.attention), ffn: fmt.int(d.ffn), block: fmt.int(d.block),
        share: fmt.pct(d.ffn_share) }],
      [["W-split.told.full", { d: d.d_model, biases: fmt.int(p.biases), norms: fmt.int(p.norms),
        extra: fmt.int(p.biases + p.norms), full: fmt.int(p.block), block: fmt.int(p.matrices) }],
      [d.d_model === 768 ? "W-split.told.gpt2.here" : "W-split.told.gpt2", { g: fmt.int(g.block), gm: fmt.int(g.matrices),
        ge: fmt.int(g.block - g.matrices) }]], modelSplit());
    },
  });
  byId("split-d").addEventListener("input", debounce(() => split.run(), 120));
  presets(split.el, () => split.run());
  return split;
}

/** the rule's exception, read off the loaded model: its own blocks' attention and FFN weights (state.info.parameters,
 * the engine's count: all blocks, so divided by their number) and what in its shape moves the share off 2/3 */
function modelSplit() {
  if (!state.info) return null;
  const { parameters: p, config: c } = state.info;
  const attention = p.attention / c.n_layers, ffn = p.ffn / c.n_layers, share = ffn / (attention + ffn);
  const values = { model: state.info.display_name, share: fmt.pct(share), ffn: fmt.int(ffn), both: fmt.int(attention + ffn) };
  if (Math.abs(share - 2 / 3) < 5e-4) return ["W-split.told.model.same", values];
  const why = [], hidden = fmt.int(c.ffn_hidden), d = fmt.int(c.d_model);
  // each family in its own words, from its configuration: its FFN's gate and activation, its heads' width and sharing
  const act = nodes(c.gelu_approximate === "tanh" ? "W-split.act.gelu-tanh" : "W-split.act.gelu");
  if (c.ffn !== "gelu") why.push(nodes(`W-split.why.${c.ffn}`, { hidden, d, act }));
  else if (c.ffn_hidden !== 4 * c.d_model) why.push(nodes("W-split.why.gelu", { hidden, d }));
  const hd = c.head_size ?? c.d_model / c.n_heads;
  if (hd * c.n_heads !== c.d_model) why.push(nodes("W-split.why.heads", { heads: c.n_heads, hd, qd: fmt.int(hd * c.n_heads) }));
  if (c.n_kv_heads && c.n_kv_heads < c.n_heads) why.push(nodes("W-split.why.kv", { heads: c.n_heads, kv: c.n_kv_heads }));
  return why.length ? ["W-split.told.model", { ...values, why: why.flatMap((x, i) => (i ? [lang() === "zh" ? "；" : "; and ", ...x] : x)) }] : null;
}

// ---- W-norm: the loaded model's N blocks with the norm on the branch or on the stream; the gradient's way back
function mountNorm() {
  const norm = widget("W-norm", {
    runsOn: "W-norm.runs-on", follows: ["model"],
    load: () => get("/api/norm-path", {}, { model: true }),
    draw(d) {
      const mode = q(norm.el, "input[name=norm]:checked").value;
      placement(q(norm.el, ".placement"), mode, d);
      norm.say([`W-norm.readout.${mode}`, { n: d.crossed[mode], layers: d.n_layers, per: d.per_block.post }]);
      told(norm, [`W-norm.told.${mode}`, { n: d.n_layers, crossed: d.crossed[mode], per: d.per_block.post }],
        [[`W-norm.told.model.${d.model_norm_position}`, {}],
          [d.after_branch ? "W-norm.told.norms.after" : "W-norm.told.norms", { model: state.info.display_name, n: d.norms_per_block }],
          d.qk_norm && ["W-norm.told.qk", {}]]);
    },
  });
  norm.el.querySelectorAll("input[name=norm]").forEach((r) => r.addEventListener("change", () => norm.redraw()));
  return norm;
}

const pending = {};  // a token to open next, set from elsewhere on the page (the attention map's click)

/** the token menu's choice (kept where the prompt still has it; at first first(count)), then the widget's request */
async function choose(prefix, first, path) {
  const tokens = (await post("/api/lookup", { prompt: state.prompt })).tokens;
  const menu = byId(`${prefix}-token`);
  const wanted = pending[prefix] ?? (menu.value === "" ? first(tokens.length) : +menu.value);
  delete pending[prefix];
  const token = Math.min(wanted, tokens.length - 1);
  const d = await post(path, { prompt: state.prompt, layer: +byId(`${prefix}-layer`).value - 1,
    head: +byId(`${prefix}-head`).value - 1, token });
  return { ...d, tokens };
}

function tokenMenu(menu, tokens, chosen) {
  menu.replaceChildren(...tokens.map((x) => new Option(`${x.position}: ${pieceLabel(x.piece)}`, x.position)));
  menu.value = chosen;
}

function wire(w, prefix) {
  byId(`${prefix}-token`).addEventListener("change", () => w.run());
  const later = debounce(() => w.run(), 120);
  for (const c of ["layer", "head"]) byId(`${prefix}-${c}`).addEventListener("input", later);
}

// ---- pictures ----------------------------------------------------------------------------------------------------

// One block: the stream a straight line left to right; attention's and the FFN's branches fork up off it, through a
// norm and the sublayer (and, where the model has one, `after`, the norm on the sublayer's output, on the way down),
// and come back down into a +. The current step is lit, the ones done drawn solid, the rest dashed and grey.
function fork(el, at, first, after = false) {
  remember(el, () => fork(el, at, first, after));
  const [svg, width] = svgOf(el, 156), main = 116, up = after ? 34 : 46, boxH = 28;
  const state = (s) => (s === at ? "lit" : s < at ? "done" : "todo");
  const ink = (s) => (s <= at ? COLORS.ink : COLORS.dim);
  const segment = (x1, x2, s) => path(svg, [[x1, main], [x2, main]], { color: s === at ? COLORS.bar : ink(s),
    width: s === at ? 4 : 3, dash: s > at ? "6 4" : "" });
  const span = (width - 24) / 2;
  const branches = [["W-block-steps.attn", 1, 4], ["W-block-steps.ffn", 4, 4 + span]];
  segment(4, 4 + span, 0);  // up to attention's + (drawn over by the +), then on to the FFN's
  segment(4 + span + 1, 4 + 2 * span - 17, 3);
  branches.forEach(([key, s0, x0], b) => {
    // the fork rises through the norm (the copy normalized on its way out), runs right through the sublayer
    const normW = Math.max(textWidth(t("W-block-steps.norm")) + 16, 54), xf = x0 + normW / 2 + 4, xm = x0 + span - 8;
    const subW = Math.min(Math.max(textWidth(t(key)) + 16, 70), xm - xf - 26), ny = (main + 46) / 2 + 2;
    const sx = xf + 12 + (xm - xf - 26 - subW) / 2;  // the sublayer midway along its branch
    path(svg, [[xf, main], [xf, up], [sx, up]], { color: ink(s0), width: 2, dash: s0 > at ? "6 4" : "" });
    box(svg, { x: xf - normW / 2, y: ny - 12, w: normW, h: 24, label: t("W-block-steps.norm"), state: state(s0),
      fill: s0 === at ? FILLS.lit : FILLS.norm, attrs: { class: "norm-box" } });
    box(svg, { x: sx, y: up - boxH / 2, w: subW, h: boxH, label: t(key), state: state(s0 + 1),
      fill: s0 + 1 === at ? FILLS.lit : FILLS.sublayer });
    arrow(svg, sx + subW, up, xm, up, { color: ink(s0 + 2), width: 2, head: false, dash: s0 + 2 > at ? "6 4" : "" });
    arrow(svg, xm, up, xm, main - 11, { color: ink(s0 + 2), width: 2, dash: s0 + 2 > at ? "6 4" : "" });
    if (after)  // above the next branch's norm, so the two never meet
      box(svg, { x: xm - normW / 2, y: up + 6, w: normW, h: 24, label: t("W-block-steps.norm"), state: state(s0 + 1),
        fill: s0 + 1 === at ? FILLS.lit : FILLS.norm, attrs: { class: "norm-box after" } });
    plus(svg, xm, main, { color: s0 + 2 === at ? COLORS.bar : ink(s0 + 2), fill: s0 + 2 === at ? FILLS.lit : "#ffffff" });
    if (b === 1) arrow(svg, xm + 9, main, width - 4, main, { color: ink(6), width: 3, dash: at < 6 ? "6 4" : "" });
  });
  svg.appendChild(text(4, main + 30, t("W-block-steps.main"), { weight: at === 0 ? "700" : "400" }));
  svg.appendChild(text(width - 4, main + 30, t("W-block-steps.out", { x: first.stream_out.toFixed(1) }), { anchor: "end" }));
  svg.appendChild(text(4, 14, t("W-block-steps.in", { x: first.stream_in.toFixed(1) })));
  el.replaceChildren(svg);
  el.setAttribute("aria-label", t(after ? "W-block-steps.aria.after" : "W-block-steps.aria"));
}

const LABEL_W = 124;  // the most a token's label takes in the reach picture (px)

/** `s` cut with … to `w` px of 12 px text in el's font */
function fitted(el, s, w) {
  let out = s;
  while (out.length > 1 && measure(el, out) > w) out = `${[...out].slice(0, -2).join("")}…`;
  return out;
}

// Reach: two panels over the prompt's tokens (one per row). Attention: a line from the picked token to every token it
// reads, its width and darkness the head's weight, the weight written beside it. The FFN: one line, to itself.
function fan(el, d, pick) {
  remember(el, () => fan(el, d, pick));
  const width = chartWidth(el), T = d.pieces.length, rowH = 20, head = 40;
  // each token's label as the page writes it, cut with … to fit its column, so it never runs into its weight
  const shown = d.pieces.map((p, i) => fitted(el, pieceLabel(p), LABEL_W - measure(el, `${i} `)));
  const lw = 1.1 * Math.max(...shown.map((p, i) => measure(el, `${i} ${p}`))) + 6;  // room for a bold one
  const side = width >= 620, panelW = side ? (width - 16) / 2 : width;
  const panelH = head + T * rowH + 8;
  const [svg] = svgOf(el, side ? panelH : 2 * panelH + 12);
  const maxW = Math.max(...d.attention);
  [["attention", 0, 0], ["ffn", side ? panelW + 16 : 0, side ? 0 : panelH + 12]].forEach(([kind, ox, oy]) => {
    const reads = kind === "attention" ? d.attention.length : 1;
    svg.appendChild(text(ox + 2, oy + 14, t(`W-reach.panel.${kind}`, { n: reads }), { weight: "700" }));
    svg.appendChild(text(ox + 2, oy + 31, t("W-reach.reads"), { fill: COLORS.axis }));
    svg.appendChild(text(ox + panelW - 2, oy + 31, t("W-reach.reader"), { fill: COLORS.axis, anchor: "end" }));
    const yOf = (i) => oy + head + i * rowH + rowH / 2;
    const x1 = ox + lw + (kind === "attention" ? 44 : 8), x2 = ox + panelW - lw - 8;
    d.pieces.forEach((_, i) => {
      const mine = i === d.token, later = i > d.token;
      const left = text(ox + 2, yOf(i) + 4, [{ text: `${i} ` }, { text: shown[i], tag: "tok" }],
        { fill: later ? COLORS.dim : COLORS.ink, weight: mine ? "700" : "400" });
      svg.appendChild(left);
      const right = text(ox + panelW - 2, yOf(i) + 4, [{ text: shown[i], tag: "tok" }, { text: ` ${i}` }],
        { anchor: "end", weight: mine ? "700" : "400", fill: mine ? COLORS.ink : COLORS.axis });
      right.setAttribute("class", "pick");
      right.style.cursor = "pointer";
      right.addEventListener("click", () => pick(i));
      svg.appendChild(right);
    });
    if (kind === "attention") {
      d.attention.forEach((w, j) => {
        svg.appendChild(shape("line", { class: "reach", x1: x2, y1: yOf(d.token), x2: x1, y2: yOf(j), stroke: COLORS.bar,
          "stroke-width": 1 + 7 * w, "stroke-opacity": 0.15 + 0.85 * (w / maxW), "data-k": j, "data-w": w }));
        svg.appendChild(text(ox + lw + 4, yOf(j) + 4, w.toFixed(2), { fill: COLORS.axis }));
      });
    } else {
      svg.appendChild(shape("line", { class: "reach", x1: x2, y1: yOf(d.token), x2: x1, y2: yOf(d.token),
        stroke: COLORS.mark, "stroke-width": 4, "data-k": d.token, "data-w": 1 }));
    }
  });
  el.replaceChildren(svg);
  el.setAttribute("aria-label", t("W-reach.aria", { piece: pieceLabel(d.pieces[d.token]), n: d.attention.length,
    weights: d.attention.map((w, j) => `${j} ${w.toFixed(2)}`).join(", ") }));
}

// Pre- or post-norm over the model's blocks (the first two and the last, when there are more than three), top to
// bottom from the embedding: the stream a straight vertical line; each sublayer's branch forks right and comes back
// into a +. Pre-norm: the norm on the branch. Post-norm: the norm on the stream after each add. The gradient's way
// back to the embedding runs beside the stream (dashed), each norm it crosses marked and numbered.
function placement(el, mode, d) {
  remember(el, () => placement(el, mode, d));
  const width = chartWidth(el), N = d.n_layers, per = d.per_block.post;
  const drawn = N <= 3 ? [...Array(N).keys()] : [0, 1, N - 1];
  const sx = 78, gx = sx - 30, subH = mode === "pre" ? 54 : 74, headH = 24, blockH = headH + 2 * subH + 6;
  const sandwich = d.after_branch > 0;  // each branch's output normalized again before the add (Gemma)
  const tight = sandwich && width < 420;  // three boxes on a branch, on a phone: closer together
  const legendH = 62, embedH = 30, top = legendH + embedH + 14;
  const height = top + drawn.length * blockH + (N > 3 ? 34 : 0) + 76;
  const [svg] = svgOf(el, height);
  // legend
  path(svg, [[4, 10], [28, 10]], { color: COLORS.ink, width: 4 });
  svg.appendChild(text(34, 14, t("W-norm.key.stream")));
  path(svg, [[4, 30], [28, 30]], { color: COLORS.mark, width: 2.5, dash: "6 4" });
  svg.appendChild(text(34, 34, t("W-norm.key.gradient")));
  box(svg, { x: 4, y: 42, w: 24, h: 14, fill: FILLS.norm, stroke: COLORS.mark });
  svg.appendChild(text(34, 54, t("W-norm.key.norm")));
  box(svg, { x: sx - 56, y: legendH, w: 112, h: embedH, label: t("W-norm.box.embedding"), fill: FILLS.done, bold: true });
  let y = top, crossed = 0;
  const marks = [];
  drawn.forEach((b, k) => {
    if (N > 3 && k === 2) {  // the blocks not drawn
      path(svg, [[sx, y], [sx, y + 34]], { color: COLORS.ink, width: 4, dash: "2 5" });
      svg.appendChild(text(sx + 16, y + 22, t("W-norm.more", { a: 3, b: N - 1 }), { fill: COLORS.axis }));
      crossed = mode === "post" ? per * (N - 1) : 0;
      y += 34;
    }
    const g = shape("g", { class: "norm-block", "data-block": b });
    g.appendChild(shape("rect", { x: sx - 44, y: y + 2, width: width - sx + 40, height: blockH - 6, rx: 8, fill: "none",
      stroke: COLORS.dim, "stroke-dasharray": "4 4" }));
    g.appendChild(text(width - 10, y + 18, t("W-norm.block", { b: b + 1 }), { anchor: "end", fill: COLORS.axis }));
    svg.appendChild(g);
    ["attention", "ffn"].forEach((sub, s) => {
      const y0 = y + headH + s * subH, crossing = branch(svg, { mode, sub, sx, from: s === 0 ? y : y0, y0, subH,
        sandwich, tight });
      if (crossing !== null) marks.push([crossing, ++crossed]);
    });
    y += blockH;
  });
  // to the top of the stack, and the gradient coming back from there to the embedding
  arrow(svg, sx, y, sx, y + 18, { color: COLORS.ink, width: 4 });
  svg.appendChild(text(sx - 56, y + 34, t("W-norm.box.top")));
  arrow(svg, gx, y + 14, gx, legendH + embedH + 4, { color: COLORS.mark, width: 2.5, dash: "6 4",
    attrs: { class: "gradient" } });
  marks.forEach(([my, k]) => {
    svg.appendChild(shape("circle", { class: "crossing", cx: gx, cy: my, r: 5, fill: COLORS.mark }));
    svg.appendChild(text(sx - 48, my + 4, String(k), { anchor: "end" }));
  });
  // the count, as text (on two lines where one does not fit)
  const count = t(`W-norm.count.${mode}`, { n: d.crossed[mode], layers: N, per }), cut = count.search(/ \(|（/);
  const lines = textWidth(count) > width - 8 && cut > 0 ? [count.slice(0, cut), count.slice(cut).trim()] : [count];
  lines.forEach((line, i) => svg.appendChild(text(4, height - 26 + 16 * i + (lines.length === 1 ? 16 : 0), line,
    { weight: "700" })));
  el.replaceChildren(svg);
  el.dataset.crossed = d.crossed[mode];
  el.setAttribute("aria-label", t(`W-norm.aria.${mode}`, { n: d.crossed[mode], layers: N }));
}

// One sublayer in a block of the placement picture, its band from y0 (subH tall): the branch forks right off the
// stream (at x = sx), runs through the norm (pre-norm), the sublayer and, where the model has one (`sandwich`), the
// norm on the branch's output, and comes back into a +; the stream runs down to it from `from`. Post-norm, the norm then
// sits on the stream itself: its middle, where the gradient crosses it, is returned (null for pre-norm).
function branch(svg, { mode, sub, sx, from, y0, subH, sandwich, tight }) {
  const fy = y0 + 10, my = y0 + (mode === "pre" ? 44 : 38), gap = tight ? 4 : 8;
  const bx = sx + (tight ? 20 : 34), normW = tight ? textWidth(t("W-norm.box.norm")) + 10
    : Math.max(textWidth(t("W-norm.box.norm")) + 14, 52);
  const subW = Math.max(textWidth(t(`W-norm.box.${sub}`)) + 16, 70);
  let x = bx;
  path(svg, [[sx, fy], [bx, fy]], { color: COLORS.ink, width: 2 });
  if (mode === "pre") {
    box(svg, { x, y: fy - 12, w: normW, h: 24, label: t("W-norm.box.norm"), fill: FILLS.norm, stroke: COLORS.mark,
      attrs: { class: "norm branch" } });
    x += normW;
    path(svg, [[x, fy], [x + gap, fy]], { color: COLORS.ink, width: 2 });
    x += gap;
  }
  box(svg, { x, y: fy - 12, w: subW, h: 24, label: t(`W-norm.box.${sub}`), fill: FILLS.sublayer });
  x += subW;
  if (sandwich) {  // the branch's output normalized before the add: on the branch, off the stream, in either placement
    path(svg, [[x, fy], [x + gap, fy]], { color: COLORS.ink, width: 2 });
    x += gap;
    box(svg, { x, y: fy - 12, w: normW, h: 24, label: t("W-norm.box.norm"), fill: FILLS.norm, stroke: COLORS.mark,
      attrs: { class: "norm branch after" } });
    x += normW;
  }
  path(svg, [[x, fy], [x + 12, fy], [x + 12, my], [sx + 10, my]], { color: COLORS.ink, width: 2 });
  arrow(svg, sx + 16, my, sx + 10, my, { color: COLORS.ink, width: 2 });
  plus(svg, sx, my);
  path(svg, [[sx, from], [sx, my - 9]], { color: COLORS.ink, width: 4 });
  const after = y0 + subH;
  if (mode === "post") {  // the norm on the stream itself, after the add
    const ny = my + 14;
    path(svg, [[sx, my + 9], [sx, ny]], { color: COLORS.ink, width: 4 });
    const g = box(svg, { x: sx - 44, y: ny, w: 92, h: 20, fill: FILLS.norm, stroke: COLORS.mark,
      attrs: { class: "norm on-stream" } });
    g.appendChild(text(sx + 12, ny + 14, t("W-norm.box.norm"), { anchor: "middle" }));
    path(svg, [[sx, ny + 20], [sx, after]], { color: COLORS.ink, width: 4 });
    return ny + 10;
  }
  path(svg, [[sx, my + 9], [sx, after]], { color: COLORS.ink, width: 4 });
  return null;
}
