// §01–§02 Inside a block: fork and merge, what attention and the FFN each read, attention opened up, where a block's
// weights live, and where the norm sits.

import { get, post } from "../lib/api.js";
import { bars, COLORS, rect, remember, shape, svgOf, text } from "../lib/charts.js";
import { byId, debounce, el, q, row, setRange, stepper } from "../lib/dom.js";
import { fmt, parts, piece, t } from "../lib/i18n.js";
import { on, state } from "../lib/state.js";
import { frame, sectionFrame, widget } from "../lib/widget.js";
import strings from "./block.strings.js";

export { strings };

const picker = (prefix) => `
  <label for="${prefix}-token" data-text="block.token"></label> <select id="${prefix}-token" data-token></select>
  <label for="${prefix}-layer" data-text="block.layer"></label> <input id="${prefix}-layer" type="range" min="0" max="0" value="0">
  <label for="${prefix}-head" data-text="block.head"></label> <input id="${prefix}-head" type="range" min="0" max="0" value="0">`;

export const html = sectionFrame("s01", [
  frame("W-block-steps", `
  <button type="button" class="prev" data-text-aria="W-block-steps.prev">◀</button>
  <button type="button" class="next" data-text-aria="W-block-steps.next">▶</button>
  <ol class="steps"></ol>
  <div class="figure fork" role="img"></div>
  <div class="chart" role="img"></div>`),
  frame("W-reach", `${picker("reach")}
  <div class="chart" role="img"></div>`),
  frame("W-attention", `${picker("att")}
  <table class="attention stack"><caption data-text="W-attention.caption"></caption><thead></thead><tbody></tbody></table>`),
  frame("W-split", `
  <label for="split-d"><code>d_model</code></label>
  <input id="split-d" type="range" min="64" max="12288" step="64" value="768">
  <div class="chart" role="img"></div>`),
  frame("W-norm", `
  <fieldset><legend data-text="W-norm.legend"></legend>
    <label><input type="radio" name="norm" value="pre" checked> <span data-text="W-norm.pre"></span></label>
    <label><input type="radio" name="norm" value="post"> <span data-text="W-norm.post"></span></label>
  </fieldset>
  <div class="figure placement" role="img"></div>`),
]);

export function mount() {
  on("model", () => {  // the layer and head sliders span the page's model
    for (const p of ["reach", "att"]) {
      setRange(byId(`${p}-layer`), { max: state.info.config.n_layers - 1 });
      setRange(byId(`${p}-head`), { max: state.info.config.n_heads - 1 });
    }
  });

  // ---- W-block-steps: the block's seven steps; the stream's size in and out of every third block
  const steps = widget("W-block-steps", {
    runsOn: "prompt", follows: ["prompt", "model"],
    load: () => post("/api/block-steps", { prompt: state.prompt }),
    draw(d) {
      const at = walk.at(), names = d.steps.map((_, i) => t(`W-block-steps.step.${i}`));
      q(steps.el, ".steps").replaceChildren(...names.map((name, i) => el("li", {
        className: i === at ? "current" : i < at ? "done" : "", textContent: name })));
      bars(q(steps.el, ".chart"), d.blocks.filter((_, i) => i % 3 === 0).map((b) => ({
        label: t("W-block-steps.bar", { b: b.block }), value: b.stream_out,
        text: t("W-block-steps.bar-text", { a: b.stream_in.toFixed(1), b: b.stream_out.toFixed(1) }) })),
      t("W-block-steps.chart"));
      fork(q(steps.el, ".fork"), at);
      steps.say(["W-block-steps.readout", { at: at + 1, n: names.length, step: names[at] }]);
    },
  });
  const walk = stepper(steps.el, () => (steps.data ? steps.data.steps.length : 1), () => steps.redraw());

  // ---- W-reach: where one token's query looks, in one layer and head
  const reach = widget("W-reach", {
    runsOn: "prompt", follows: ["prompt", "model"],
    load: () => choose("reach", (n) => n - 1, "/api/reach"),
    draw(d) {
      tokenMenu(byId("reach-token"), d.tokens, d.token);
      const best = d.attention.indexOf(Math.max(...d.attention));
      bars(q(reach.el, ".chart"), d.attention.map((a, i) => ({
        label: [{ text: `${i}: ` }, { text: JSON.stringify(d.pieces[i]), tag: "tok" }], value: a, text: a.toFixed(3),
        mark: i === d.token })), parts("W-reach.chart", { layer: d.layer, head: d.head, piece: piece(d.pieces[d.token]) }));
      reach.say(["W-reach.readout", { n: d.token + 1, keep: d.token, piece: piece(d.pieces[best]),
        w: d.attention[best].toFixed(3) }]);
    },
  });
  wire(reach, "reach");

  // ---- W-attention: one query against every key, step by step
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
        const tr = row([[{ text: `${j}: ` }, { text: JSON.stringify(p), tag: "tok" }], d.dots[j].toFixed(3),
          d.scaled[j].toFixed(3), t(mask), d.weights[j].toFixed(4)], heads);
        if (j === d.token) tr.className = "current";
        else if (!d.allowed[j]) tr.className = "masked";
        return tr;
      }));
      const best = d.weights.indexOf(Math.max(...d.weights));
      attention.say(["W-attention.readout", { layer: d.layer, head: d.head, kv: d.kv_head, piece: piece(d.pieces[d.token]),
        hd: d.head_dim, scale: d.scale.toFixed(4), masked: d.allowed.filter((a) => !a).length,
        best: piece(d.pieces[best]), w: d.weights[best].toFixed(3), out: d.output_head.join(", "),
        norm: d.output_norm.toFixed(2) }]);
    },
  });
  wire(attention, "att");

  // ---- W-split: 12d² per block, the FFN's 8d² two thirds at any width
  const split = widget("W-split", {
    runsOn: "W-split.runs-on",
    load: () => get("/api/split", { d: byId("split-d").value }),
    draw(d) {
      bars(q(split.el, ".chart"), [{ label: t("W-split.attention"), value: d.attention, text: fmt.int(d.attention) },
        { label: t("W-split.ffn"), value: d.ffn, text: fmt.int(d.ffn), mark: true }], t("W-split.chart", { d: d.d_model }));
      split.say(["W-split.readout", { d: d.d_model, block: fmt.int(d.block), share: fmt.pct(d.ffn_share) }]);
    },
  });
  byId("split-d").addEventListener("input", debounce(() => split.run(), 120));

  // ---- W-norm: where the norm sits, and how many the gradient crosses on the residual path (the model's N)
  const norm = widget("W-norm", {
    runsOn: "model", follows: ["model"],
    load: async () => state.info,
    draw(info) {
      const mode = q(norm.el, "input[name=norm]:checked").value;
      placement(q(norm.el, ".placement"), mode);
      norm.say([`W-norm.readout.${mode}`, { n: info.norms_on_residual_path[mode], layers: info.config.n_layers }]);
    },
  });
  norm.el.querySelectorAll("input[name=norm]").forEach((r) => r.addEventListener("change", () => norm.redraw()));
}

/** the token menu's choice (kept where the prompt still has it; at first first(count)), then the widget's request */
async function choose(prefix, first, path) {
  const tokens = (await post("/api/lookup", { prompt: state.prompt })).tokens;
  const menu = byId(`${prefix}-token`);
  const token = Math.min(menu.value === "" ? first(tokens.length) : +menu.value, tokens.length - 1);
  const d = await post(path, { prompt: state.prompt, layer: +byId(`${prefix}-layer`).value,
    head: +byId(`${prefix}-head`).value, token });
  return { ...d, tokens };
}

function tokenMenu(menu, tokens, chosen) {
  menu.replaceChildren(...tokens.map((x) => new Option(`${x.position}: ${JSON.stringify(x.piece)}`, x.position)));
  menu.value = chosen;
}

function wire(w, prefix) {
  byId(`${prefix}-token`).addEventListener("change", () => w.run());
  const later = debounce(() => w.run(), 120);
  for (const c of ["layer", "head"]) byId(`${prefix}-${c}`).addEventListener("input", later);
}

// The block's main line with its two branches, the current step lit
function fork(box, at) {
  remember(box, () => fork(box, at));
  const [svg, width] = svgOf(box, 150), mid = Math.min(width - 20, 520);
  const lit = (s) => (s.includes(at) ? COLORS.mark : COLORS.dim);
  const line = (x1, y1, x2, y2, stroke) => svg.appendChild(shape("line", { x1, y1, x2, y2, stroke, "stroke-width": 3 }));
  line(10, 120, mid, 120, lit([0, 3, 6]));
  svg.appendChild(text(10, 144, t("W-block-steps.main")));
  [[0.12, 0.42, "W-block-steps.attn", [1, 2, 3]], [0.55, 0.85, "W-block-steps.ffn", [4, 5, 6]]].forEach(([a, b, key, s]) => {
    const x1 = 10 + a * (mid - 10), x2 = 10 + b * (mid - 10), stroke = lit(s);
    line(x1, 120, x1, 40, stroke); line(x1, 40, x2, 40, stroke); line(x2, 40, x2, 120, stroke);
    svg.appendChild(text(x1 + 6, 32, t(key)));
    svg.appendChild(text(x2 - 10, 112, "+"));
  });
  box.replaceChildren(svg);
  box.setAttribute("aria-label", t("W-block-steps.aria"));
}

// Where the norm sits: on the branch (pre) or on the main line after the add (post)
function placement(box, mode) {
  remember(box, () => placement(box, mode));
  const [svg, width] = svgOf(box, 96), boxW = Math.min(110, (width - 40) / 4);
  const boxes = mode === "pre" ? [["stream", 0], ["norm", 1, true], ["sublayer", 2], ["add", 3]]
    : [["stream", 0], ["sublayer", 1], ["add", 2], ["norm", 3, true]];
  boxes.forEach(([name, i, isNorm]) => rect(svg, { x: 4 + i * (boxW + 10), y: 8, width: boxW, height: 34, rx: 4,
    fill: isNorm ? "#fde68a" : "#eef0f3", stroke: "#8a939e" }, t(`W-norm.box.${name}`)));
  svg.appendChild(text(4, 72, t(`W-norm.path.${mode}`)));
  box.replaceChildren(svg);
  box.setAttribute("aria-label", t(`W-norm.aria.${mode}`));
}
