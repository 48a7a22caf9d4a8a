// Inside a block, on the reader's own token (W-mechanism): one block opened stage by stage on the real model, from the
// token's row of the embedding table to what the block hands the next one. The stages are the model's own (the server
// reads them off its config: QK-norm, RoPE, the norms after each branch, a gated FFN and its activation); the reader
// picks the token, the block and the head, and steps through. The pictures are in mechanism.stages.js.

import { post } from "../lib/api.js";
import { byId, debounce, q, setRange } from "../lib/dom.js";
import { fmt, lang, parts, pieceLabel, readable, t } from "../lib/i18n.js";
import { on, state } from "../lib/state.js";
import { times, told } from "../lib/told.js";
import { num } from "../lib/vector.js";
import { frame, widget } from "../lib/widget.js";
import { asValue, drawStage, SYMBOL } from "./mechanism.stages.js";
import strings from "./mechanism.strings.js";

export { strings };

const control = (id, key, input) => `<span class="control"><label for="${id}" data-text="${key}"></label>
    ${input}</span>`;

// the widget's markup, placed by block.js inside §2 (right after W-block-steps): it opens one of §2's blocks
export const widgetHtml = `<div id="mechanism">${frame("W-mechanism", `
  <div class="mech-controls">
  ${control("mech-token", "mech.token", `<select id="mech-token"></select>`)}
  ${control("mech-layer", "mech.layer", `<input id="mech-layer" type="range" min="1" max="1" value="1">`)}
  ${control("mech-head", "mech.head", `<input id="mech-head" type="range" min="1" max="1" value="1">`)}
  </div>
  <div class="mech-steps">
    <button type="button" class="prev" data-text-aria="mech.prev">◀</button>
    <button type="button" class="next" data-text-aria="mech.next">▶</button>
    <div class="mech-stages" role="group" data-text-aria="mech.stages"></div>
  </div>
  <div class="figure mech-figure" role="img"></div>`)}</div>`;

// the stages that read the chosen head; the others (the norms, the adds, the FFN) are the same for every head
const HEADED = new Set(["qkv", "qk_norm", "rope", "scores", "softmax", "weighted_sum", "heads"]);

export function mount() {
  let at = 0, shown = null;  // the stage on screen: its index, and its name (kept when another answer comes)
  on("model", () => {  // the sliders span the page's model; blocks and heads count from 1 on the page, 0 on the server
    const { n_layers: layers, n_heads: heads } = state.info.config;
    setRange(byId("mech-layer"), { min: 1, max: layers });
    setRange(byId("mech-head"), { min: 1, max: heads });
  });
  const w = widget("W-mechanism", {
    runsOn: "prompt", follows: ["prompt", "model"],
    async load() {
      const tokens = (await post("/api/lookup", { prompt: state.prompt })).tokens;
      const menu = byId("mech-token");
      // at first the prompt's last token, the one W-block-steps and W-reach follow
      const token = menu.value === "" ? tokens.length - 1 : Math.min(+menu.value, tokens.length - 1);
      const d = await post("/api/mechanism", { prompt: state.prompt, layer: +byId("mech-layer").value - 1,
        head: +byId("mech-head").value - 1, token });
      return { ...d, tokens };
    },
    draw(d) {
      const menu = byId("mech-token");
      menu.replaceChildren(...d.tokens.map((x) => new Option(t("mech.option", { i: x.position, piece: pieceLabel(x.piece) }),
        x.position)));
      menu.value = d.token;
      const found = d.stages.findIndex((s) => s.name === shown);
      at = found >= 0 ? found : Math.min(at, d.stages.length - 1);
      const stage = d.stages[at];
      shown = stage.name;
      chips(w, d, at, go);
      const figure = q(w.el, ".mech-figure");
      const names = drawStage(figure, d, stage);
      figure.setAttribute("aria-label", t("mech.aria", { stage: t(`mech.stage.${stage.name}`), names: names.join(", ") }));
      w.say([HEADED.has(stage.name) ? "mech.readout" : "mech.readout.block", { at: at + 1, n: d.stages.length, stage: t(`mech.stage.${stage.name}`), layer: d.layer + 1,
        head: d.head + 1, token: d.token, piece: readable(d.pieces[d.token]) }]);
      told(w, ...toldOf(d, stage));
    },
  });
  const go = (i) => {
    if (!w.data) return;
    at = Math.max(0, Math.min(w.data.stages.length - 1, i));
    shown = w.data.stages[at].name;
    w.redraw();
  };
  q(w.el, ".prev").addEventListener("click", () => go(at - 1));
  q(w.el, ".next").addEventListener("click", () => go(at + 1));
  byId("mech-token").addEventListener("change", () => w.run());
  const later = debounce(() => w.run(), 150);
  for (const c of ["layer", "head"]) byId(`mech-${c}`).addEventListener("input", later);
  w.el.dataset.source = "model";
}

/** one button per stage, the one shown pressed */
function chips(w, d, at, go) {
  const box = q(w.el, ".mech-stages");
  box.replaceChildren(...d.stages.map((s, i) => {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "stage";
    b.textContent = `${i + 1} ${t(`mech.stage.${s.name}`)}`;
    b.setAttribute("aria-pressed", String(i === at));
    b.addEventListener("click", () => go(i));
    return b;
  }));
}

/** the stage's numbered prose: what it computed, with the model's numbers */
function toldOf(d, s) {
  const v = d.vectors, sh = d.shape, piece = (j) => readable(d.pieces[j]);
  const capital = (x) => (lang() === "en" ? x[0].toUpperCase() + x.slice(1) : x);
  const norm = (name) => num(v[name].norm);
  const start = v.x0 ? "x0" : v.e_scaled ? "e_scaled" : "e";
  switch (s.name) {
    case "embedding": {
      const e = v.e.lead.map(num);
      return [[["mech.told.embedding", { t: d.token, piece: piece(d.token), id: fmt.int(s.id),
        vocab: fmt.int(sh.vocab_size), d: sh.d_model, e0: e[0], e1: e[1], e2: e[2] }],
      s.scale && ["mech.told.embedding.scale", { d: sh.d_model, s: num(s.scale), n: norm("e_scaled"), n0: norm("e") }],
      s.position_row && ["mech.told.embedding.position", { n: norm("x0") }]]];
    }
    case "stream":
      return [d.layer === 0 ? ["mech.told.stream.first", { n: norm("x") }]
        : ["mech.told.stream", { layer: d.layer + 1, before: d.layer, n: norm("x"), n0: norm(start) }]];
    case "attn_norm": case "ffn_norm": {
      const part = s.parts[0];
      const what = capital(t(`mech.stage.${s.name}`));
      const x = SYMBOL[part.input] || "x";  // x before attention, x′ (the stream after the first add) before the FFN
      return [part.kind === "rmsnorm" ? ["mech.told.rmsnorm", { what, x, rms: num(part.rms), n: norm(part.output) }]
        : ["mech.told.layernorm", { what, x, mean: num(part.mean), std: num(part.std), n: norm(part.output) }]];
    }
    case "qk_norm":
      return [["mech.told.qk_norm", { hd: sh.head_dim, rq: num(s.parts[0].rms), rk: num(s.parts[1].rms) }]];
    case "attn_post_norm": case "ffn_post_norm":
      return [["mech.told.post_norm", { rms: num(s.parts[0].rms ?? s.parts[0].std), n: norm(s.parts[0].output) }]];
    case "qkv":
      return [[sh.n_heads === sh.n_kv_heads ? "mech.told.qkv.mha" : "mech.told.qkv", { h: d.head + 1, hd: sh.head_dim, d: sh.d_model, g: s.kv_head + 1,
        list: fmt.list(s.sharing.map((h) => String(h + 1)), true), nh: sh.n_heads, nkv: sh.n_kv_heads,
        group: sh.n_heads / sh.n_kv_heads }]];
    case "rope": {
      const values = { t: s.position, half: sh.head_dim / 2, hd: sh.head_dim, theta: fmt.int(s.theta), a0: num(s.angles[0]),
        alast: num(s.angles[s.angles.length - 1]), key: s.score.key, piece: piece(s.score.key), dist: s.score.distance,
        before: num(s.score.before), after: num(s.score.after) };
      return [[s.score.distance > 0 ? "mech.told.rope" : "mech.told.rope.self", values]];
    }
    case "scores": {
      const best = argmax(s.scaled, s.allowed);
      const scale = s.scale_of === "head_dim" ? t("mech.scale.head_dim", { s: num(s.scale), hd: sh.head_dim })
        : t("mech.scale.query_scale", { s: num(s.scale), q: num(s.query_scalar) });
      return [["mech.told.scores", { scale, masked: s.allowed.filter((a, j) => !a && j > d.token).length,
        best: num(s.scaled[best]), piece: piece(best) }]];
    }
    case "softmax": {
      const best = argmax(s.weights);
      return [["mech.told.softmax", { n: d.token + 1, max: num(s.max), sum: s.sum.toFixed(4), w: num(s.weights[best]),
        piece: piece(best) }]];
    }
    case "weighted_sum": {
      const top = s.values.reduce((a, b) => (b.weight > a.weight ? b : a));
      return [["mech.told.weighted_sum", { n: s.of, hd: sh.head_dim, norm: norm("o_head"), piece: piece(top.key),
        w: num(top.weight) }]];
    }
    case "heads":
      return [["mech.told.heads", { nh: sh.n_heads, hd: sh.head_dim, joined: fmt.int(sh.n_heads * sh.head_dim),
        h: d.head + 1, d: fmt.int(sh.d_model), norm: norm("a") }]];
    case "residual_attn":
      return [["mech.told.residual_attn", { x: norm(s.stream), b: norm(s.branch), out: norm(s.output) }]];
    case "gate_up": case "up":
      return [[`mech.told.${s.name}`, { hidden: fmt.int(sh.hidden), ratio: times(sh.hidden / sh.d_model) }]];
    case "activation": {
      const fn = asValue(parts(`mech.fn.${s.function}`));
      return [s.gated ? ["mech.told.activation.gated", { fn, pos: fmt.pct(s.share_positive), norm: norm("prod") }]
        : ["mech.told.activation", { fn, hidden: fmt.int(sh.hidden), pos: fmt.pct(s.share_positive), norm: norm("prod") }]];
    }
    case "down":
      return [["mech.told.down", { d: fmt.int(sh.d_model), hidden: fmt.int(sh.hidden), norm: norm("f") }]];
    case "residual_ffn":
      return [[s.last ? "mech.told.residual_ffn.last" : "mech.told.residual_ffn", { x: norm(s.stream), b: norm(s.branch),
        out: norm(s.output), next: d.layer + 2 }]];
    default:
      return [];
  }
}

/** the index of the largest value (among the allowed ones) */
function argmax(values, allowed = null) {
  let best = -1;
  values.forEach((x, j) => { if ((!allowed || allowed[j]) && (best < 0 || x > values[best])) best = j; });
  return best;
}
