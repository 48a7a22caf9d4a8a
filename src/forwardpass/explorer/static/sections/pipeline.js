// §00 The pipeline: the token lookup, the six stages, parameters vs depth, add vs replace on the residual stream.

import { get, post } from "../lib/api.js";
import { bars, chartWidth, COLORS, lines, rect, remember, shape, svgOf, text } from "../lib/charts.js";
import { arrow, box, FILLS } from "../lib/diagram.js";
import { byId, debounce, el, q, row, setRange, stepper, tokenSpan } from "../lib/dom.js";
import { fmt, hasBytes, lang, nodes, parts, piece, pieceLabel, readable, t } from "../lib/i18n.js";
import { DEFAULT_PROMPTS, state } from "../lib/state.js";
import { preset, presets, told } from "../lib/told.js";
import { frame, sectionFrame, widget } from "../lib/widget.js";
import strings from "./pipeline.strings.js";

export { strings };

const STAGES = 6;

export const html = sectionFrame("s00", [
  frame("W-lookup", `
  <span class="control"><label for="lookup-pos" data-text="W-lookup.position"></label>
    <input id="lookup-pos" type="range" min="0" max="0" value="0"></span>
  <table id="token-table"><caption data-text="W-lookup.caption"></caption>
    <thead><tr><th scope="col" data-text="W-lookup.col.position"></th><th scope="col" data-text="W-lookup.col.id"></th>
    <th scope="col" data-text="W-lookup.col.piece"></th><th scope="col" data-text="W-lookup.col.row"></th></tr></thead>
    <tbody></tbody></table>
  <p class="token-writing" data-text="W-lookup.writing"></p>`),
  frame("W-stages", `
  <div class="stepper">
    <button type="button" class="prev" data-text-aria="W-stages.prev">◀</button>
    <button type="button" class="next" data-text-aria="W-stages.next">▶</button>
  </div>
  <div class="stage-layout">
    <div class="figure stages-figure" role="img"></div>
    <div class="stage-notes"></div>
  </div>`),
  frame("W-depth", `
  <span class="control"><label for="depth-n" data-text="W-depth.n"></label>
    <input id="depth-n" type="range" min="1" max="96" value="12"></span>
  <div class="presets" role="group" data-text-aria="W-depth.presets">
    ${preset({ "depth-n": 12 }, "W-depth.preset.12")}
    ${preset({ "depth-n": 48 }, "W-depth.preset.48")}
  </div>
  <div class="chart" role="img"></div>`),
  frame("W-residual", `
  <fieldset><legend data-text="W-residual.legend"></legend>
    <label><input type="radio" name="residual" value="add" checked> <span data-text="W-residual.add"></span></label>
    <label><input type="radio" name="residual" value="replace"> <span data-text="W-residual.replace"></span></label>
  </fieldset>
  <div class="figure cells" role="img"></div>
  <div class="chart" role="img"></div>`),
  `<p class="prose bridge" data-text="bridge-s00"></p>`,
]);

export function mount() {
  const lookup = mountLookup();
  const stages = mountStages();
  const depth = mountDepth();
  const residual = mountResidual();
  // what each runs on, seen at a glance: the loaded model or a formula on a fixed shape
  for (const [w, source] of [[lookup, "model"], [stages, "model"], [depth, "formula"], [residual, "model"]])
    w.el.dataset.source = source;
}

// ---- W-lookup: a token is a row number; the slider picks one (no request: the table holds every token)
function mountLookup() {
  const lookup = widget("W-lookup", {
    runsOn: "prompt", follows: ["prompt", "model", "toy"],
    load: async () => {
      const data = await post("/api/lookup", { prompt: state.prompt });
      // a prompt without a repeat is pointed at the page's default prompt (in the page's language): its first
      // repeated token, as this model cuts it
      const fallback = DEFAULT_PROMPTS[state.toy];
      if (!data.tokens.some((x) => x.same_as !== null) && fallback !== state.prompt) {
        const again = (await post("/api/lookup", { prompt: fallback })).tokens.find((x) => x.same_as !== null);
        data.default_repeat = again && (again.char ? piece(again.char) : readable(again.piece));
      }
      return data;
    },
    draw(data) {
      const slider = byId("lookup-pos"), last = data.tokens.length - 1;
      const at = setRange(slider, { max: Math.max(0, last), value: Math.min(+slider.value, last) });
      const chosen = data.tokens[at];
      const heads = ["position", "id", "piece", "row"].map((c) => t(`W-lookup.col.${c}`));
      q(lookup.el, "tbody").replaceChildren(...data.tokens.map((tok) => {
        const label = [tokenSpan(pieceLabel(tok.piece))];  // a byte piece says which character it is part of
        if (tok.char) label.push(" ", el("span", { className: "token of", textContent: lang() === "zh" ? `（${tok.char}）` : `(${tok.char})` }));
        label.forEach((x) => { if (x.dataset) x.dataset.token = ""; });
        const tr = row([String(tok.position), String(tok.id), el("span", {}, label), `[${tok.row.join(", ")}, …]`], heads);
        if (tok.position === at) tr.className = "current";
        else if (tok.id === chosen.id) tr.className = "repeat";
        return tr;
      }));
      const same = data.tokens.filter((x) => x.id === chosen.id).map((x) => String(x.position));
      const kin = kinOf(data.tokens, chosen);
      lookup.say(["W-lookup.readout", { at, piece: readable(chosen.piece), id: chosen.id, vocab: data.vocab_size }],
        ...(same.length > 1 ? [["W-lookup.same", { list: fmt.list(same, true) }]] : []),
        ...(kin ? [["W-lookup.kin", { piece: readable(kin.piece), position: kin.position, id: kin.id }]] : []));
      // the prose, from this same answer: what a byte piece is (where the prompt has one), the prompt's first
      // repeated token (a byte shared by two characters said so), and a word written two ways
      const bytes = data.tokens.find((x) => x.char && hasBytes(x.piece));
      const again = data.tokens.find((x) => x.same_as !== null);
      const earlier = again && data.tokens[again.same_as];
      const pair = data.tokens.map((x) => [x, kinOf(data.tokens, x)]).find(([, k]) => k);
      const repeat = !again ? (data.default_repeat ? ["W-lookup.told.none", { piece: data.default_repeat }]
        : ["W-lookup.told.none-bare"])
        : again.same_vector && again.char && earlier.char && again.char !== earlier.char
          ? ["W-lookup.told.bytes-shared", { a: again.same_as, b: again.position, piece: readable(again.piece),
            id: again.id, d: data.d_model, ca: piece(earlier.char, false), cb: piece(again.char, false) }]
          : [again.same_vector ? "W-lookup.told.same" : "W-lookup.told.differ", { a: again.same_as, b: again.position,
            piece: readable(again.piece), id: again.id, d: data.d_model }];
      told(lookup,
        bytes && ["W-lookup.told.bytes", { char: piece(bytes.char, false),
          spelled: piece(bytes.char_tokens.map((p) => pieceLabel(data.tokens[p].piece)).join(" + "), false) }],
        [repeat, pair && ["W-lookup.told.kin", { a: readable(pair[0].piece), ia: pair[0].position, ida: pair[0].id,
          b: readable(pair[1].piece), ib: pair[1].position, idb: pair[1].id }]]);
    },
  });
  byId("lookup-pos").addEventListener("input", () => lookup.redraw());
  return lookup;
}

// ---- W-stages: the six stages as one diagram, lit one by one, each arrow the shape handed on (this prompt, this model)
function mountStages() {
  const stages = widget("W-stages", {
    runsOn: "prompt", follows: ["prompt", "model"],
    load: () => post("/api/stages", { prompt: state.prompt }),
    draw(d) {
      const at = step.at(), sh = shapes(d), names = stageNames(d);
      // what each stage does, beside its box (a wide page) or the lit one's alone under the diagram (a phone)
      const notes = q(stages.el, ".stage-notes");
      notes.replaceChildren(...Array.from({ length: STAGES }, (_, i) => {
        const p = el("p", { className: i === at ? "stage-note lit" : "stage-note" },
          nodes(`W-stages.what.${whatKey(d, i)}`, { n: d.n_layers, d: d.d_model, v: d.vocab_size, piece: readable(d.next.piece) }));
        p.dataset.stage = i;
        p.addEventListener("click", () => step.go(i));
        return p;
      }));
      stagesFigure(q(stages.el, ".stages-figure"), d, at, (i) => step.go(i), notes);
      stages.say(["W-stages.readout", { at: at + 1, name: names[at], shape: sh[at] }]);
      told(stages, ["W-stages.told", { t: d.tokens, ids: dims(d.ids_shape), emb: dims(d.embedding),
        n: d.blocks_run, block: dims(d.blocks[1]), logits: dims(d.logits), v: d.vocab_size, piece: readable(d.next.piece) }]);
    },
  });
  const step = stepper(stages.el, () => STAGES, () => stages.redraw());
  return stages;
}

// ---- W-depth: GPT-2 small's width, N blocks (cost.py's count: no model is run)
function mountDepth() {
  const depth = widget("W-depth", {
    runsOn: "runs-on.gpt2",
    load: () => get("/api/depth", { n: byId("depth-n").value }),
    draw(d) {
      lines(q(depth.el, ".chart"), [d.series], { names: [t("W-depth.series")], x: t("W-depth.x"), y: t("W-depth.y"),
        markX: d.n_layers, markLabel: fmt.params(d.total) });
      depth.say(["W-depth.readout", { n: d.n_layers, total: fmt.params(d.total), exact: fmt.int(d.total),
        ratio: d.ratio_to_12.toFixed(2), block: fmt.params(d.per_block) }]);
      const small = d.gpt2_small, parts = d.block_parts;
      told(depth, ["W-depth.told", { n12: small.n_layers, t12: fmt.params(small.total), t12exact: fmt.int(small.total),
        block: fmt.params(small.per_block), blockexact: fmt.int(small.per_block), outside: fmt.params(d.outside_blocks),
        n48: d.n48.n_layers, t48: fmt.params(d.n48.total), r48: d.n48.ratio_to_12.toFixed(2) }],
      ["W-depth.told.block", { block: fmt.int(parts.block), matrices: fmt.int(parts.matrices), biases: fmt.int(parts.biases),
        norms: fmt.int(parts.norms) }]);
    },
  });
  byId("depth-n").addEventListener("input", debounce(() => depth.run(), 120));
  presets(depth.el, () => depth.run());
  return depth;
}

// ---- W-residual: every sublayer adds into the stream, or (the counterfactual) replaces it; both run, one drawn
function mountResidual() {
  const residual = widget("W-residual", {
    runsOn: "prompt", follows: ["prompt", "model"],
    load: async () => {
      const [add, replace] = await Promise.all(["add", "replace"].map((mode) =>
        post("/api/residual", { prompt: state.prompt, mode })));
      return { add, replace };
    },
    draw(both) {
      const mode = q(residual.el, "input[name=residual]:checked").value, d = both[mode], name = t(`W-residual.mode.${mode}`);
      bars(q(residual.el, ".chart"), d.next.map((x) => ({ label: pieceLabel(x.piece), token: true,
        value: x.probability, text: fmt.pct(x.probability), mark: mode === "replace" })),
      t("W-residual.chart", { mode: name }), { axis: t("W-residual.axis"), tick: pct });
      cells(q(residual.el, ".cells"), mode);
      residual.say(["W-residual.readout", { mode: name, piece: readable(d.next[0].piece), p: fmt.pct(d.next[0].probability) }],
        ...(mode === "replace" ? [["W-residual.erased"]] : []));
      const kept = [both.add, both.replace].every((r) => r.stream_shapes.every((s) => s.join() === r.stream_shapes[0].join()));
      told(residual, [["W-residual.told", { a: readable(both.add.next[0].piece), pa: fmt.pct(both.add.next[0].probability),
        r: readable(both.replace.next[0].piece), pr: fmt.pct(both.replace.next[0].probability) }],
      [kept ? "W-residual.told.kept" : "W-residual.told.changed", { shape: both.add.stream_shapes[0].join(" × "),
        n: both.add.stream_shapes.length }]]);
    },
  });
  residual.el.querySelectorAll("input[name=residual]").forEach((r) => r.addEventListener("change", () => residual.redraw()));
  return residual;
}

const pct = (v) => `${Math.round(v * 100)}%`;
const dims = (s) => `(${s.join(", ")})`;

/** another token of the prompt that is the same word written another way (a capital, a leading space) */
function kinOf(tokens, chosen) {
  const word = (x) => x.piece.trim().toLowerCase();
  return tokens.find((x) => x.id !== chosen.id && word(x) === word(chosen) && word(x) !== "") || null;
}

function stageNames(d) {
  // a RoPE model adds no position at the embedding: its box says where position comes in instead
  return Array.from({ length: STAGES }, (_, i) =>
    t(i === 1 && d.positions === "rope" ? "W-stages.stage.1.rope" : `W-stages.stage.${i}`, { n: d.n_layers }));
}

/** what each stage takes and hands on, as the model's own modules saw it */
function shapes(d) {
  return [t("W-stages.shape.0", { ids: dims(d.ids_shape) }), `${dims(d.ids_shape)} → ${dims(d.embedding)}`,
    t("W-stages.shape.2", { n: d.blocks_run, a: dims(d.blocks[0]), b: dims(d.blocks[1]) }),
    `${dims(d.blocks[1])} → ${dims(d.final_norm_shape)}`, `${dims(d.final_norm_shape)} → ${dims(d.logits)}`,
    t("W-stages.shape.5", { logits: dims(d.logits), v: d.vocab_size })];
}

const whatKey = (d, at) => (at === 1 ? `1.${d.positions}` : at === 3 && !d.final_norm ? "3.none" : String(at));

// The six stages top to bottom; the block stage a band of N thin slabs (drawn taller), each arrow labelled with the
// tensor it carries. The lit stage is outlined in blue, the ones before it done (✓), the ones after it dashed.
function stagesFigure(el, d, at, pick, notes) {
  remember(el, () => stagesFigure(el, d, at, pick, notes));
  const width = chartWidth(el), boxW = Math.min(width - 8, 300), x = 4, gap = 36, boxH = 32;
  const slabs = Math.min(d.n_layers, 48), slabH = Math.max(3, Math.min(9, Math.floor(168 / slabs) - 1));
  const bandH = 28 + slabs * (slabH + 1) + 8;
  const heights = [boxH, boxH, bandH, boxH, boxH, boxH];
  const carried = [t("W-stages.carry.ids", { s: dims(d.ids_shape) }), dims(d.embedding), dims(d.blocks[1]),
    dims(d.final_norm_shape), dims(d.logits)];
  const total = 26 + heights.reduce((a, b) => a + b, 0) + gap * 6;
  const [svg] = svgOf(el, total);
  const state = (i) => (i === at ? "lit" : i < at ? "done" : "todo");
  let y = 4;
  svg.appendChild(text(x + 24, y + 12, t("W-stages.input")));
  arrow(svg, x + 16, y, x + 16, y + 18, { color: COLORS.ink });
  y += 22;
  const names = stageNames(d);
  const tops = [];
  heights.forEach((h, i) => {
    tops.push(y);
    const attrs = { "data-stage": i, "data-state": state(i), class: "stage" };
    const mark = i < at ? "✓ " : "";
    if (i === 2) {  // the band: N identical blocks stacked
      const g = box(svg, { x, y, w: boxW, h, state: state(i), attrs });
      g.setAttribute("data-blocks", d.n_layers);
      g.appendChild(text(x + 10, y + 19, `${mark}${names[i]}`, { weight: i === at ? "700" : "400" }));
      for (let s = 0; s < slabs; s++) {
        g.appendChild(shape("rect", { class: "slab", x: x + 10, y: y + 28 + s * (slabH + 1), width: boxW - 56, height: slabH,
          rx: 1, fill: i <= at ? COLORS.bar : "#ffffff", "fill-opacity": i === at ? 0.85 : i < at ? 0.35 : 1,
          stroke: COLORS.bar, "stroke-width": 0.6 }));
      }
      g.appendChild(text(x + boxW - 40, y + 28 + slabH + 4, "1"));
      g.appendChild(text(x + boxW - 40, y + 28 + slabs * (slabH + 1) - 1, d.n_layers > slabs ? `… ${d.n_layers}` : String(d.n_layers)));
      g.addEventListener("click", () => pick(i));
    } else {
      box(svg, { x, y, w: boxW, h, state: state(i), label: `${mark}${names[i]}`, attrs })
        .addEventListener("click", () => pick(i));
    }
    y += h;
    const lit = i < at, label = i < 5 ? carried[i] : parts("W-stages.carry.next", { piece: readable(d.next.piece) });
    arrow(svg, x + 16, y + 2, x + 16, y + gap - 4, { color: lit ? COLORS.ink : COLORS.dim, width: lit ? 2.5 : 1.5 });
    svg.appendChild(text(x + 30, y + gap / 2 + 5, label, { weight: i === at ? "700" : "400" }));
    y += gap;
  });
  el.replaceChildren(svg);
  // beside the diagram (a wide page), each stage's sentence sits level with its box (the svg is drawn at its own
  // scale: its coordinates are pixels); under it (a phone), only the lit stage's
  const beside = getComputedStyle(el.parentElement).display === "grid" && el.offsetLeft < notes.offsetLeft;
  notes.classList.toggle("beside", beside);
  notes.style.height = beside ? `${total}px` : "";
  const scale = el.getBoundingClientRect().width / (svg.viewBox.baseVal.width || 1);
  notes.querySelectorAll(".stage-note").forEach((p, i) => {
    p.style.top = beside ? `${Math.max(0, (tops[i] + (i === 2 ? 30 : 4)) * scale)}px` : "";
  });
  el.setAttribute("aria-label", t("W-stages.aria", { at: at + 1, name: names[at], n: d.n_layers,
    shapes: carried.join(" → ") }));
}

// The residual stream as a row of cells: each sublayer's output is added into it (or, replacing, written over it).
function cells(boxEl, mode) {
  remember(boxEl, () => cells(boxEl, mode));
  const [svg, width] = svgOf(boxEl, 116), n = 8, size = Math.min(34, (width - 150) / n);
  const layers = [[3, -1, 2, 0, 1, -2, 1, 2], [1, 2, -1, 1, 0, 1, -1, 0], [0, -1, 1, 2, -1, 0, 2, -1]];
  let stream = Array(n).fill(0);
  layers.forEach((add, r) => {
    stream = mode === "add" ? stream.map((x, i) => x + add[i]) : add.slice();
    const name = t(`W-residual.row.${r}`);
    svg.appendChild(text(4, 22 + r * 36, r === 0 ? name : `${mode === "add" ? "+" : "→"} ${name}`));
    stream.forEach((x, i) => rect(svg, { x: 120 + i * size, y: 6 + r * 36, width: size - 3, height: 28, rx: 3,
      fill: x === 0 ? FILLS.done : x > 0 ? FILLS.lit : FILLS.norm, stroke: COLORS.dim }, String(x)));
  });
  boxEl.replaceChildren(svg);
  boxEl.setAttribute("aria-label", t(`W-residual.cells.${mode}`, { cells: stream.join(", ") }));
}
