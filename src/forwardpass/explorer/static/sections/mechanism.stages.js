// W-mechanism's pictures: one per kind of stage the server sends (explorer/mechanism.py), drawn top to bottom into
// one SVG at the box's own width, every vector with its shape and every matrix with its rows × columns:
//   embedding     the table's rows around the token's id, its own lit, then the row (× √d_model, + a position row)
//   stream        the row of the stream this block reads
//   norms         x, its RMS (or mean and deviation), x̂, the gain γ, the output (one part per norm: q's and k's too)
//   matvec        the input on top of each matrix, the output beside it, the first output entry's sum written out
//   rope          q before and after, a few pairs turned on dials, every pair's angle, one score before and after
//   scores        q·k × the scale for every key, the later ones masked
//   softmax       the weights, summing to 1
//   weighted_sum  the most weighted values, each × its weight, and their sum
//   residual      the stream + the branch = the new stream

import { chartWidth, COLORS, remember, shape, svgOf, text, textWidth } from "../lib/charts.js";
import { code, fmt, parts, pieceLabel, readable, t } from "../lib/i18n.js";
import { grid, legend, num, strip, vectorRow } from "../lib/vector.js";

/** the vectors' and matrices' names: math, the same in every language */
export const SYMBOL = {
  e: "e", e_scaled: "e·√d", p: "p", x0: "e + p", x: "x", x_hat: "x̂", g_attn: "γ", h: "h",
  q: "q", k: "k", v: "v", q_hat: "q̂", g_q: "γ_q", q_n: "q̃", k_hat: "k̂", g_k: "γ_k", k_n: "k̃",
  q_rot: "q′", k_rot: "k′", o_head: "o_h", o: "o", a: "a", a_hat: "â", g_a: "γ", a_n: "ã", x_mid: "x′",
  u_hat: "x̂′", g_ffn: "γ", u: "h′", gate: "g", up: "u", act: "φ(g)", prod: "m", f: "f", f_hat: "f̂", g_f: "γ",
  f_n: "f̃", x_out: "x″",
  table: "E", W_Q: "W_Q", W_K: "W_K", W_V: "W_V", W_O: "W_O", W_gate: "W_gate", W_up: "W_up", W_down: "W_down",
};
const sym = (name) => SYMBOL[name] || name;

/** one stage's picture into `el`; returns the names of the vectors it drew (for its text alternative) */
export function drawStage(el, d, stage) {
  remember(el, () => drawStage(el, d, stage));
  const width = chartWidth(el);
  const [svg] = svgOf(el, 100);
  const p = new Sheet(svg, width, d);
  KINDS[stage.kind](p, stage, d);
  if (p.names.length) {  // the strips' scale, where the picture has strips
    p.gap(4);
    p.y += legend(svg, 0, p.y);
    p.say(t("mech.legend"), { fill: COLORS.axis });
  }
  svg.setAttribute("viewBox", `0 0 ${width} ${Math.ceil(p.y + 4)}`);
  el.replaceChildren(svg);
  return p.names;
}

/** a picture drawn downwards: y is where the next thing goes */
class Sheet {
  constructor(svg, width, d) { Object.assign(this, { svg, width, d, y: 2, names: [] }); }

  gap(h) { this.y += h; }

  /** text (a string or i18n parts) wrapped to the width, 18 px a line */
  say(content, { weight = "400", fill = COLORS.ink, x = 0 } = {}) {
    for (const line of wrap(typeof content === "string" ? [{ text: content }] : content, this.width - x - 4)) {
      this.svg.appendChild(text(x, this.y + 13, line, { weight, fill }));
      this.y += 18;
    }
  }

  vector(name, options = {}) {
    const v = this.d.vectors[name];
    this.names.push(`${sym(name)} (${v.shape[0]})`);
    this.y += vectorRow(this.svg, 0, this.y, this.width, v, { name: options.label || sym(name), ...options });
  }
}

/** i18n parts cut into lines no wider than `width` (at words in English, anywhere between CJK characters) */
function wrap(list, width) {
  const pieces = list.flatMap((p) => (p.tag === "code" || p.tag === "tok" ? [p]
    : p.text.split(/(?<=[\s，、；：。）])|(?=[\u3000-\u9fff])/).filter(Boolean).map((s) => ({ ...p, text: s }))));
  const lines = [[]];
  let used = 0;
  for (const p of pieces) {
    const w = textWidth(p.text);
    if (used + w > width && lines[lines.length - 1].length) { lines.push([]); used = 0; }
    if (!lines[lines.length - 1].length && !p.tag) p.text = p.text.replace(/^\s+/, "");
    lines[lines.length - 1].push(p);
    used += w;
  }
  return lines;
}

/** a piece of i18n parts drawn as code; and a template's parts as a value for another template */
const codePart = (s) => ({ text: s, tag: "code" });
export const asValue = (list) => list.map((x) => (x.tag === "code" ? code(x.text) : x.text));

// ---- the kinds ----------------------------------------------------------------------------------------------------
const KINDS = { embedding, stream, norms, matvec, rope, scores, softmax, weighted_sum: weightedSum, residual, activation };

function embedding(p, s, d) {
  const m = d.matrices.table, g = m.grid;
  p.say(t("mech.table", { rows: fmt.int(m.shape[0]), cols: fmt.int(m.shape[1]), id: fmt.int(s.id) }), { weight: "600" });
  const labels = s.rows.map((id, i) => `${id} ${pieceLabel(s.pieces[i])}`);
  const lw = Math.min(Math.max(...labels.map((l) => textWidth(l))) + 10, 150), sw = p.width - lw - 6;
  if (s.rows[0] > 0) p.say("⋮", { fill: COLORS.axis, x: lw + sw / 2 });
  s.rows.forEach((id, i) => {
    const mine = id === s.id, y = p.y;
    p.svg.appendChild(text(0, y + 12, [{ text: `${id} ` }, { text: pieceLabel(s.pieces[i]), tag: "tok" }],
      { weight: mine ? "700" : "400", fill: mine ? COLORS.ink : COLORS.axis }));
    strip(p.svg, lw, y + 2, sw, 12, { cells: g.cells.slice(i * g.cols, (i + 1) * g.cols) },
      { lit: mine ? [0, g.cols - 1] : null });
    p.gap(18);
  });
  if (s.rows[s.rows.length - 1] < m.shape[0] - 1) p.say("⋮", { fill: COLORS.axis, x: lw + sw / 2 });
  p.gap(6);
  p.vector("e", { label: `e = E[${s.id}]`, lit: true });
  if (s.scale) {
    p.say(t("mech.scale", { d: d.shape.d_model, s: num(s.scale) }), { weight: "600" });
    p.vector("e_scaled");
  }
  if (s.position_row) {
    p.vector("p", { label: `p = P[${d.token}]` });
    p.vector("x0");
  }
}

function stream(p, s, d) {
  p.say(t("mech.stream", { layer: d.layer + 1, shape: `(${s.shape.join(", ")})`, t: d.token }), { weight: "600" });
  p.vector("x", { lit: true });
}

function norms(p, s) {
  s.parts.forEach((part, i) => {
    if (i) p.gap(10);
    p.vector(part.input);
    if (part.kind === "rmsnorm") p.say(parts("mech.rms", { rms: num(part.rms), eps: num(part.eps) }));
    else p.say(t("mech.layernorm", { mean: num(part.mean), std: num(part.std) }));
    p.vector(part.hat, { label: `${sym(part.hat)} = ${t("mech.norm.hat", { x: sym(part.input),
      rms: part.kind === "rmsnorm" ? "rms" : "σ" })}` });
    p.vector(part.gain);
    if (part.bias) p.vector(part.bias, { label: "β" });
    p.vector(part.output, { label: `${sym(part.output)} = ${t("mech.norm.out", { hat: sym(part.hat), gain: sym(part.gain) })}${part.bias ? " + β" : ""}`,
      lit: true });
  });
}

function matvec(p, s, d) {
  const input = d.vectors[s.input];
  const per = input.strip.per;
  if (s.span) p.say(t("mech.heads.joined", { n: d.shape.n_heads, hd: d.shape.head_dim, total: input.shape[0],
    h: d.head + 1 }), { weight: "600" });
  p.vector(s.input);
  s.products.forEach(({ matrix, output }) => {
    const m = d.matrices[matrix], out = d.vectors[output], [rows, cols] = m.shape;
    p.gap(8);
    p.say([codePart(`${sym(output)} = ${sym(matrix)} · ${sym(s.input)}`),
      { text: `   (${fmt.int(rows)} × ${fmt.int(cols)}) · (${fmt.int(cols)}) → (${fmt.int(rows)})` }], { weight: "600" });
    // the input across the top, the matrix under it (one output per row), the output down its right side
    const L = p.width - 64, boxH = Math.max(30, Math.min(120, Math.round((L * rows) / cols)));
    const lit = s.span ? [Math.floor(s.span[0] / per), Math.floor((s.span[1] - 1) / per)] : [0, 0];
    strip(p.svg, 0, p.y + 2, L, 10, input.strip, { lit });
    p.svg.appendChild(text(L + 8, p.y + 11, [codePart(sym(s.input))], { fill: COLORS.axis }));
    const top = p.y + 18;
    grid(p.svg, 0, top, L, boxH, m, { litRow: true });
    strip(p.svg, L + 16, top, 14, boxH, out.strip, { vertical: true, lit: [0, 0] });
    p.svg.appendChild(text(L + 36, top + 12, [codePart(sym(output))]));
    p.y = top + boxH + 4;
    p.say([codePart(sym(matrix)), { text: `  ${fmt.int(rows)} × ${fmt.int(cols)}` }], { fill: COLORS.axis });
    // the first output entry: the first row of the matrix dotted with the input
    const terms = Math.max(1, Math.min(3, Math.floor((p.width - 220) / 170)));
    const sum = m.lead.slice(0, terms).map((w, i) => product(w, input.lead[i], i === 0)).join(" ");
    p.say(t(m.bias0 === null || m.bias0 === undefined ? "mech.sum" : "mech.sum.bias",
      { out: sym(output), terms: sum, n: fmt.int(cols), value: num(out.lead[0]) }));
    p.vector(output, { lit: true });
  });
  if (s.sharing) sharing(p, s, d);
}

/** one term of a worked dot product: "−0.0038 × (−4.287)" first, then "+ 0.0076 × 3.165" or "− 0.015 × (−17.82)" */
function product(w, x, first) {
  const factor = x < 0 ? `(${num(x)})` : num(x);
  if (first) return `${num(w)} × ${factor}`;
  return `${w < 0 ? "−" : "+"} ${num(Math.abs(w))} × ${factor}`;
}

/** which query heads read which K/V head: a box per head, a line from each to its K/V head, the chosen group lit */
function sharing(p, s, d) {
  const { n_heads: nh, n_kv_heads: nkv } = d.shape, group = nh / nkv;
  p.gap(6);
  p.say(t("mech.shares", { list: fmt.list(s.sharing.map((h) => String(h + 1))).join(""), g: s.kv_head + 1,
    count: s.sharing.length }),
    { weight: "600" });
  const cell = Math.min(34, (p.width - 8) / nh), top = p.y + 2, bottom = top + 46;
  const kvX = (g) => (g * group + group / 2) * cell;
  for (let h = 0; h < nh; h++) {
    const g = Math.floor(h / group), mine = h === d.head, lit = g === s.kv_head;
    p.svg.appendChild(shape("line", { x1: h * cell + cell / 2, y1: top + 20, x2: kvX(g), y2: bottom,
      stroke: lit ? COLORS.bar : COLORS.dim, "stroke-width": lit ? 2 : 1 }));
    p.svg.appendChild(shape("rect", { x: h * cell + 2, y: top, width: cell - 4, height: 20, rx: 3,
      fill: lit ? "#cfe6f5" : "#ffffff", stroke: mine ? COLORS.ink : COLORS.axis, "stroke-width": mine ? 2.5 : 1 }));
    if (cell >= 18 || mine) p.svg.appendChild(text(h * cell + cell / 2, top + 14, String(h + 1), { anchor: "middle",
      weight: mine ? "700" : "400" }));
  }
  for (let g = 0; g < nkv; g++) {
    const lit = g === s.kv_head, w = Math.max(cell * 0.9, 30);
    p.svg.appendChild(shape("rect", { x: kvX(g) - w / 2, y: bottom, width: w, height: 20, rx: 3,
      fill: lit ? "#cfe6f5" : "#ffffff", stroke: lit ? COLORS.ink : COLORS.axis, "stroke-width": lit ? 2 : 1 }));
    p.svg.appendChild(text(kvX(g), bottom + 14, `KV ${g + 1}`, { anchor: "middle" }));
  }
  p.y = bottom + 26;
}

function rope(p, s, d) {
  p.vector(s.input);
  p.vector(s.output, { lit: true });
  p.vector(s.key_output);
  p.gap(4);
  // a few pairs on dials: the pair before (dashed) and after (solid) its turn
  const per = Math.max(2, Math.floor(p.width / 124)), R = 30, cellW = p.width / Math.min(per, s.pairs.length);
  s.pairs.forEach((pair, i) => {
    const col = i % per, row = Math.floor(i / per), cx = col * cellW + cellW / 2, cy = p.y + row * 108 + R + 4;
    const len = Math.hypot(...pair.q) || 1, k = (R - 3) / len;
    p.svg.appendChild(shape("circle", { cx, cy, r: R, fill: "none", stroke: COLORS.dim }));
    p.svg.appendChild(shape("line", { x1: cx, y1: cy, x2: cx + k * pair.q[0], y2: cy - k * pair.q[1],
      stroke: COLORS.axis, "stroke-width": 2, "stroke-dasharray": "4 3" }));
    p.svg.appendChild(shape("circle", { cx: cx + k * pair.q[0], cy: cy - k * pair.q[1], r: 3, fill: "#ffffff",
      stroke: COLORS.axis, "stroke-width": 1.5 }));
    p.svg.appendChild(shape("line", { x1: cx, y1: cy, x2: cx + k * pair.q_rot[0], y2: cy - k * pair.q_rot[1],
      stroke: COLORS.bar, "stroke-width": 2.5 }));
    p.svg.appendChild(shape("circle", { cx: cx + k * pair.q_rot[0], cy: cy - k * pair.q_rot[1], r: 3.5,
      fill: COLORS.bar }));
    p.svg.appendChild(text(cx, cy + R + 16, t("mech.rope.pair", { i: pair.i }), { anchor: "middle" }));
    p.svg.appendChild(text(cx, cy + R + 32, t("mech.rope.angle", { a: num(pair.angle) }), { anchor: "middle",
      fill: COLORS.axis }));
  });
  p.y += Math.ceil(s.pairs.length / per) * 108;
  p.say(t("mech.rope.key"), { fill: COLORS.axis });
  if (s.position > 0) angles(p, s);
  p.gap(4);
  p.say(parts("mech.rope.score", { key: s.score.key, piece: readable(d.pieces[s.score.key]),
    dist: s.score.distance, before: num(s.score.before), after: num(s.score.after) }), { weight: "600" });
}

/** every pair's angle at this position, on a log scale (pair 0 turns fastest) */
function angles(p, s) {
  const n = s.angles.length, h = 110, left = 44, right = p.width - 18;  // room for the last pair's label, centred
  p.say(t("mech.rope.chart", { n, t: s.position }), { weight: "600" });
  const logs = s.angles.map((a) => Math.log10(Math.max(a, 1e-12)));
  const lo = Math.floor(Math.min(...logs)), hi = Math.ceil(Math.max(...logs)), y0 = p.y + 4;
  const X = (i) => left + (i / Math.max(1, n - 1)) * (right - left), Y = (v) => y0 + h - ((v - lo) / Math.max(1, hi - lo)) * h;
  const step = Math.max(1, Math.ceil((hi - lo) / 5));
  for (let v = hi; v >= lo; v -= step) {
    p.svg.appendChild(shape("line", { class: "tick", x1: left - 4, x2: left, y1: Y(v), y2: Y(v), stroke: COLORS.axis }));
    p.svg.appendChild(text(left - 6, Y(v) + 4, power(v), { anchor: "end" }));
  }
  for (const i of [0, Math.floor(n / 2), n - 1]) {
    p.svg.appendChild(shape("line", { class: "tick", x1: X(i), x2: X(i), y1: y0 + h, y2: y0 + h + 4, stroke: COLORS.axis }));
    p.svg.appendChild(text(X(i), y0 + h + 16, String(i), { anchor: "middle" }));
  }
  p.svg.appendChild(shape("line", { x1: left, x2: left, y1: y0, y2: y0 + h, stroke: COLORS.axis }));
  p.svg.appendChild(shape("line", { x1: left, x2: right, y1: y0 + h, y2: y0 + h, stroke: COLORS.axis }));
  logs.forEach((v, i) => p.svg.appendChild(shape("circle", { cx: X(i), cy: Y(v), r: 2.5, fill: COLORS.bar })));
  p.svg.appendChild(text(right, y0 + h + 32, t("mech.rope.axis"), { anchor: "end", weight: "600" }));
  p.y = y0 + h + 38;
}

/** 10 to the power v as the axis writes it: 1, 10, 10⁻² */
const SUPER = { "-": "⁻", 0: "⁰", 1: "¹", 2: "²", 3: "³", 4: "⁴", 5: "⁵", 6: "⁶", 7: "⁷", 8: "⁸", 9: "⁹" };
const power = (v) => (v === 0 ? "1" : v === 1 ? "10" : `10${[...String(v)].map((c) => SUPER[c]).join("")}`);

/** the keys drawn: every one on a short prompt; else the most weighted (the rest counted in one line) */
function keysShown(d, weights) {
  const T = weights.length;
  if (T <= 24) return { keys: [...Array(T).keys()], rest: 0 };
  const keys = [...Array(d.token + 1).keys()].sort((a, b) => weights[b] - weights[a]).slice(0, 16).sort((a, b) => a - b);
  return { keys, rest: d.token + 1 - keys.length, below: Math.min(...keys.map((k) => weights[k])) };
}

/** one row per key: its label, a bar from 0 (signed, or 0 … 1), its value; a masked key greyed with why */
function keyRows(p, d, values, { signed, allowed, weights, header }) {
  const { keys, rest, below } = keysShown(d, weights);
  const labels = keys.map((j) => `${j} ${pieceLabel(d.pieces[j])}`);
  const lw = Math.min(Math.max(...labels.map((l) => textWidth(l))) + 10, 160), vw = 64, bw = p.width - lw - vw - 8;
  const top = Math.max(...keys.filter((j) => allowed[j]).map((j) => Math.abs(values[j])), 1e-9);
  const zero = signed ? lw + bw / 2 : lw, scale = signed ? bw / 2 / top : bw / Math.max(top, 1e-9);
  p.svg.appendChild(text(0, p.y + 12, header[0], { weight: "600" }));
  p.svg.appendChild(text(p.width - 2, p.y + 12, header[1], { weight: "600", anchor: "end" }));
  p.gap(18);
  const y0 = p.y;
  keys.forEach((j) => {
    const mine = j === d.token, y = p.y;
    p.svg.appendChild(text(0, y + 13, [{ text: `${j} ` }, { text: pieceLabel(d.pieces[j]), tag: "tok" }],
      { weight: mine ? "700" : "400", fill: allowed[j] ? COLORS.ink : COLORS.axis }));
    if (allowed[j]) {
      const w = values[j] * scale;
      p.svg.appendChild(shape("rect", { class: "bar", x: w < 0 ? zero + w : zero, y: y + 4, width: Math.max(1, Math.abs(w)),
        height: 12, fill: w < 0 ? COLORS.bar : COLORS.mark }));
      p.svg.appendChild(text(p.width - 2, y + 13, num(values[j]), { anchor: "end" }));
    } else {
      p.svg.appendChild(text(zero + 4, y + 13, t(j > d.token ? "mech.masked" : "mech.window"), { fill: COLORS.axis }));
      p.svg.appendChild(text(p.width - 2, y + 13, signed ? "−∞" : "0", { anchor: "end", fill: COLORS.axis }));
    }
    p.gap(18);
  });
  p.svg.appendChild(shape("line", { x1: zero, x2: zero, y1: y0, y2: p.y, stroke: COLORS.axis }));
  if (rest > 0) p.say(t("mech.more", { n: rest, w: num(below) }), { fill: COLORS.axis });
}

function scores(p, s, d) {
  const weights = d.stages.find((x) => x.kind === "softmax").weights;
  const T = s.scaled.length, hd = d.shape.head_dim;
  p.say([codePart(`s = K′ q′ × ${num(s.scale)}`), { text: `   (${T} × ${hd}) · (${hd}) → (${T})` }], { weight: "600" });
  keyRows(p, d, s.scaled, { signed: true, allowed: s.allowed, weights,
    header: [t("mech.col.key"), t("mech.col.score", { scale: num(s.scale) })] });
}

function softmax(p, s, d) {
  const allowed = d.stages.find((x) => x.kind === "scores").allowed;
  const T = s.weights.length;
  p.say([codePart("w = softmax(s)"), { text: `   (${T}) → (${T})` }], { weight: "600" });
  p.say([codePart(`w_j = exp(s_j − ${num(s.max)}) / Σ exp(s − ${num(s.max)})`)]);
  keyRows(p, d, s.weights, { signed: false, allowed, weights: s.weights, header: [t("mech.col.key"), t("mech.col.weight")] });
  p.say(t("mech.sum1", { sum: s.sum.toFixed(4) }), { weight: "600" });
}

function weightedSum(p, s, d) {
  const T = d.pieces.length, hd = d.shape.head_dim;
  p.say([codePart("o_h = wᵀ V"), { text: `   (${T}) · (${T} × ${hd}) → (${hd})` }], { weight: "600" });
  p.say(t("mech.ws.shown", { n: s.values.length, of: s.of }));
  const lw = Math.min(Math.max(...s.values.map((x) => textWidth(`${num(x.weight)} × v_${x.key} ${pieceLabel(d.pieces[x.key])}`))) + 12, 220);
  s.values.forEach((x) => {
    p.svg.appendChild(text(0, p.y + 12, [codePart(`${num(x.weight)} × v_${x.key}`), { text: " " },
      { text: pieceLabel(d.pieces[x.key]), tag: "tok" }]));
    strip(p.svg, lw, p.y + 2, Math.min(p.width - lw - 4, 320), 12, x.v.strip);
    p.gap(18);
  });
  p.gap(4);
  p.vector(s.output, { label: "o_h = Σ w_j v_j", lit: true });
}

function residual(p, s, d) {
  p.vector(s.stream);
  p.say("+", { weight: "700" });
  p.vector(s.branch);
  p.say("=", { weight: "700" });
  p.vector(s.output, { lit: true });
  p.say(s.last ? t("mech.final") : t("mech.next-block", { b: d.layer + 2 }), { fill: COLORS.axis });
}

// the activation: its curve first, then the vectors it joins
function activation(p, s) {
  curve(p, s);
  p.vector(s.input);
  if (s.gated) {
    p.vector("act");
    p.say("⊙", { weight: "700" });
    p.vector("up");
  }
  p.vector(s.output, { label: s.gated ? "m = φ(g) ⊙ u" : "m = φ(u)", lit: true });
}

/** the activation's curve (sampled by the server, the model's own function) with the input's first entries on it */
function curve(p, s) {
  p.say(parts("mech.act.chart", { fn: asValue(parts(`mech.fn.${s.function}`)), x: code(sym(s.input)) }),
    { weight: "600" });
  const h = 120, left = 36, right = Math.min(p.width - 8, 520), y0 = p.y + 6;
  const ys = s.curve.map((c) => c[1]), lo = Math.min(0, ...ys), hi = Math.max(...ys);
  const X = (x) => left + ((x + 5) / 10) * (right - left), Y = (y) => y0 + h - ((y - lo) / (hi - lo)) * h;
  const yTicks = [Math.ceil(lo), 0, Math.floor(hi / 2) * 1 || 1, Math.floor(hi)].filter((v, i, a) => a.indexOf(v) === i && v >= lo && v <= hi);
  yTicks.forEach((v) => {
    p.svg.appendChild(shape("line", { class: "tick", x1: left - 4, x2: left, y1: Y(v), y2: Y(v), stroke: COLORS.axis }));
    p.svg.appendChild(text(left - 6, Y(v) + 4, String(v).replace("-", "−"), { anchor: "end" }));
  });
  [-5, -2.5, 0, 2.5, 5].forEach((v) => {
    p.svg.appendChild(shape("line", { class: "tick", x1: X(v), x2: X(v), y1: y0 + h, y2: y0 + h + 4, stroke: COLORS.axis }));
    p.svg.appendChild(text(X(v), y0 + h + 16, String(v).replace("-", "−"), { anchor: "middle" }));
  });
  p.svg.appendChild(shape("line", { x1: left, x2: left, y1: y0, y2: y0 + h, stroke: COLORS.axis }));
  p.svg.appendChild(shape("line", { x1: left, x2: right, y1: Y(0), y2: Y(0), stroke: COLORS.axis }));
  p.svg.appendChild(shape("polyline", { points: s.curve.map(([x, y]) => `${X(x)},${Y(y)}`).join(" "), fill: "none",
    stroke: COLORS.bar, "stroke-width": 2 }));
  s.points.filter(([x]) => x >= -5 && x <= 5).forEach(([x, y]) => p.svg.appendChild(shape("circle", { cx: X(x), cy: Y(y),
    r: 4, fill: COLORS.mark, stroke: COLORS.ink })));
  p.y = y0 + h + 24;
}
