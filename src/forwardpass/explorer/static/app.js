// The explorer's page: it draws; every number comes from the engine's JSON endpoints, every word from prose.js.
import { PROSE } from "./prose.js";

const W = (name) => document.querySelector(`[data-widget="${name}"]`);
const q = (root, sel) => root.querySelector(sel);
const SVG = "http://www.w3.org/2000/svg";

// the model this page shows: ?model=NAME (one of /api/models), else the one the explorer started with
const MODEL = new URLSearchParams(location.search).get("model");

async function api(path, body) {
  if (MODEL && body) body = { ...body, model: MODEL };
  if (MODEL && !body && /^\/api\/(model|loop-cost)\b/.test(path)) path += `${path.includes("?") ? "&" : "?"}model=${encodeURIComponent(MODEL)}`;
  const init = body ? { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) } : {};
  const response = await fetch(path, init);
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

const fmt = {
  params: (n) => (n >= 1e9 ? `${(n / 1e9).toFixed(1)}B` : `${(n / 1e6).toFixed(1)}M`),
  pct: (x) => `${Math.abs(x) < 5e-4 ? "0.0" : (100 * x).toFixed(1)}%`,  // never "-0.0%"
  count: (n, one, many = one + "s") => `${fmt.int(n)} ${n === 1 ? one : many}`,
  gib: (x) => `${x.toFixed(2)} GiB`,
  int: (n) => n.toLocaleString("en-US"),
  piece: (s) => JSON.stringify(s),
};

function say(widget, text) { q(widget, ".readout").textContent = text; }

function status(text) { document.getElementById("status").textContent = text; }

// Charts are drawn at their box's own pixel width (one SVG unit = one CSS pixel), so their 12 px text stays 12 px on a
// phone, and drawn again when the window changes size.
const drawn = new Map();  // chart element → the call that drew it
function chartWidth(el) { return Math.max(260, Math.floor(el.clientWidth || 560)); }
const textWidth = (s) => [...s].reduce((w, ch) => w + (ch.charCodeAt(0) > 0x2e80 ? 12 : 7), 0);  // 12 px text
const COLORS = { bar: "#2f6fde", mark: "#b8441c", dim: "#8a939e" };  // ≥ 3:1 against white

// Horizontal bars: items [{label, value, text, mark, dim}], drawn into el (an element with role="img"). Labels are never
// cut: where they do not fit beside their bars, each goes on its own line above its bar.
function bars(el, items, title = "") {
  drawn.set(el, () => bars(el, items, title));
  const width = chartWidth(el), max = Math.max(...items.map((d) => Math.abs(d.value)), 1e-12);
  const longest = Math.max(...items.map((d) => textWidth(d.label)), 0) + 8;
  const textW = Math.max(...items.map((d) => textWidth(d.text)), 0) + 10;
  const above = longest > width * 0.4;  // labels on their own lines
  const labelW = above ? 0 : longest, rowH = above ? 38 : 22, barTop = above ? 19 : 3;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${items.length * rowH + (title ? 22 : 4)}`);
  svg.setAttribute("width", width);
  let y = 2;
  if (title) { svg.appendChild(text(4, 14, title, "600")); y = 22; }
  items.forEach((d, i) => {
    const top = y + i * rowH;
    svg.appendChild(text(4, top + 15, d.label));
    const rect = document.createElementNS(SVG, "rect");
    const w = Math.max(1, ((width - labelW - textW - 8) * Math.abs(d.value)) / max);
    Object.entries({ x: labelW + 4, y: top + barTop, width: w, height: 16, rx: 2,
      fill: d.mark ? COLORS.mark : d.dim ? COLORS.dim : COLORS.bar }).forEach(([k, v]) => rect.setAttribute(k, v));
    svg.appendChild(rect);
    svg.appendChild(text(labelW + w + 10, top + barTop + 12, d.text));
  });
  el.replaceChildren(svg);
  el.setAttribute("aria-label", `${title ? title + ": " : ""}${items.map((d) => `${d.label} ${d.text}`).join("; ")}`);
}

function text(x, y, s, weight = "400") {
  const t = document.createElementNS(SVG, "text");
  t.setAttribute("x", x); t.setAttribute("y", y); t.setAttribute("font-size", "12"); t.setAttribute("font-weight", weight);
  t.setAttribute("fill", "#1d232a");
  t.textContent = s;
  return t;
}

function rect(svg, attrs, label) {
  const r = document.createElementNS(SVG, "rect");
  Object.entries(attrs).forEach(([k, v]) => r.setAttribute(k, v));
  svg.appendChild(r);
  if (label !== undefined) svg.appendChild(text(attrs.x + 4, attrs.y + attrs.height / 2 + 4, label));
  return r;
}

function svgOf(el, height) {
  const svg = document.createElementNS(SVG, "svg"), width = chartWidth(el);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", width);
  return [svg, width];
}

// A line chart of [x, y] series, with an optional marker at x = markX.
function lines(el, series, { labels, markX, title }) {
  drawn.set(el, () => lines(el, series, { labels, markX, title }));
  const width = chartWidth(el), height = 200, pad = 36;
  const xs = series.flatMap((s) => s.map((p) => p[0])), ys = series.flatMap((s) => s.map((p) => p[1]));
  const [x0, x1, y1] = [Math.min(...xs), Math.max(...xs), Math.max(...ys, 1e-12)];
  const X = (x) => pad + ((x - x0) / Math.max(x1 - x0, 1)) * (width - 2 * pad);
  const Y = (y) => height - pad + 10 - (y / y1) * (height - pad - 10);
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", width);
  const colors = [COLORS.bar, COLORS.mark, "#23804b"];
  series.forEach((s, i) => {
    const path = document.createElementNS(SVG, "polyline");
    path.setAttribute("points", s.map((p) => `${X(p[0])},${Y(p[1])}`).join(" "));
    Object.entries({ fill: "none", stroke: colors[i], "stroke-width": 2 }).forEach(([k, v]) => path.setAttribute(k, v));
    svg.appendChild(path);
    s.forEach((p) => {  // every point also as a dot: a one-point series is still seen
      const dot = document.createElementNS(SVG, "circle");
      Object.entries({ cx: X(p[0]), cy: Y(p[1]), r: s.length > 40 ? 1.5 : 3, fill: colors[i] }).forEach(([k, v]) => dot.setAttribute(k, v));
      svg.appendChild(dot);
    });
    svg.appendChild(text(pad + 4, 14 + 14 * i, labels[i], "600")).setAttribute("fill", colors[i]);
  });
  if (markX !== undefined) {
    const line = document.createElementNS(SVG, "line");
    Object.entries({ x1: X(markX), x2: X(markX), y1: 10, y2: height - pad + 10, stroke: "#888", "stroke-dasharray": 4 })
      .forEach(([k, v]) => line.setAttribute(k, v));
    svg.appendChild(line);
  }
  svg.appendChild(text(pad, height - 6, `${title}: ${fmt.int(x0)} … ${fmt.int(x1)}`));
  el.replaceChildren(svg);
  el.setAttribute("aria-label", `line chart over ${title} ${fmt.int(x0)} to ${fmt.int(x1)}: ` + series.map((s, i) =>
    `${labels[i]} from ${fmt.int(s[0][1])} to ${fmt.int(s[s.length - 1][1])}`).join("; "));
}

function stepper(widget, count, render) {
  let at = 0;
  const go = (i) => { at = Math.max(0, Math.min(count() - 1, i)); render(at); };
  q(widget, ".prev").addEventListener("click", () => go(at - 1));
  q(widget, ".next").addEventListener("click", () => go(at + 1));
  go(0);
  return go;
}

function onInput(el, fn, delay = 120) {
  let timer;
  const run = () => fn().catch((e) => status(`error: ${e.message}`));
  el.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(run, delay); });
  return run;
}

const prompt = () => document.getElementById("prompt").value;
let model = null;

// ---- §00 ------------------------------------------------------------------------------------------
async function lookup() {
  const w = W("W-lookup"), data = await api("/api/lookup", { prompt: prompt() });
  const slider = document.getElementById("lookup-pos");
  slider.max = Math.max(0, data.tokens.length - 1);
  const at = Math.min(+slider.value, data.tokens.length - 1);
  const chosen = data.tokens[at];
  const heads = ["position", "id", "piece", "embedding row"];
  q(w, "tbody").replaceChildren(...data.tokens.map((t) => {
    const tr = row([t.position, t.id, fmt.piece(t.piece), `[${t.row.join(", ")}, …]`], heads);
    if (t.position === at) tr.className = "current";
    else if (t.id === chosen.id) tr.className = "repeat";
    return tr;
  }));
  const same = data.tokens.filter((t) => t.id === chosen.id).map((t) => t.position);
  const word = (t) => t.piece.trim().toLowerCase();
  const kin = data.tokens.filter((t) => t.id !== chosen.id && word(t) === word(chosen) && word(t) !== "");
  say(w, `position ${at}: ${fmt.piece(chosen.piece)} is id ${chosen.id}, row ${chosen.id} of the ${fmt.int(data.vocab_size)}-row table` +
    (same.length > 1 ? `; positions ${same.join(" and ")} share that id and that row — no position yet` : "") +
    (kin.length ? `; ${fmt.piece(kin[0].piece)} at position ${kin[0].position} is another token (id ${kin[0].id}): a leading space and capitals are part of the piece` : ""));
}

function stages() {
  const w = W("W-stages"), list = q(w, ".stages"), c = model.config;
  const shapes = ["text → ids (T)", `(T, ${c.d_model})`, `${c.n_layers} × block: (T, ${c.d_model}) → (T, ${c.d_model})`,
    `(T, ${c.d_model})`, `(T, ${c.d_model}) → (T, ${c.vocab_size})`, `(T, ${c.vocab_size}) scores`];
  list.replaceChildren(...model.stages.map((s, i) => {
    const li = document.createElement("li"); li.textContent = `${s} — ${shapes[i]}`;
    if (i === 2) li.classList.add("tall");
    return li;
  }));
  stepper(w, () => 6, (at) => {
    [...list.children].forEach((li, i) => { li.classList.toggle("current", i === at); li.classList.toggle("done", i < at); });
    say(w, `stage ${at + 1} of 6: ${model.stages[at]} — ${shapes[at]}`);
  });
}

async function depth() {
  const w = W("W-depth"), n = +document.getElementById("depth-n").value, d = await api(`/api/depth?n=${n}`);
  lines(q(w, ".chart"), [d.series], { labels: ["parameters"], markX: n, title: "N blocks" });
  say(w, `N = ${n}: ${fmt.params(d.total)} parameters (${fmt.int(d.total)}), ${d.ratio_to_12.toFixed(2)}× N = 12; each block ${fmt.params(d.per_block)}`);
}

async function residual() {
  const w = W("W-residual"), mode = q(w, "input[name=residual]:checked").value;
  const d = await api("/api/residual", { prompt: prompt(), mode });
  bars(q(w, ".chart"), d.next.map((t) => ({ label: fmt.piece(t.piece), value: t.probability, text: fmt.pct(t.probability),
    mark: mode === "replace" })), `next token, sublayers ${mode === "add" ? "add" : "replace"}`);
  cells(q(w, ".cells"), mode);
  const shape = d.stream_shapes[0].join(" × ");
  say(w, `${mode}: the stream keeps its shape (${shape}) at all ${d.stream_shapes.length} boundaries; top next token ${fmt.piece(d.next[0].piece)} at ${fmt.pct(d.next[0].probability)}` +
    (mode === "replace" ? " — earlier blocks' work erased" : ""));
}

// The residual stream as a row of cells: each sublayer's output is added into it (or, replacing, written over it).
function cells(el, mode) {
  drawn.set(el, () => cells(el, mode));
  const [svg, width] = svgOf(el, 116), n = 8, size = Math.min(34, (width - 150) / n);
  const layers = [["embedding", [3, -1, 2, 0, 1, -2, 1, 2]], ["+ attention", [1, 2, -1, 1, 0, 1, -1, 0]],
    ["+ FFN", [0, -1, 1, 2, -1, 0, 2, -1]]];
  let stream = Array(n).fill(0);
  layers.forEach(([name, add], row) => {
    stream = mode === "add" ? stream.map((x, i) => x + add[i]) : add.slice();
    svg.appendChild(text(4, 22 + row * 36, mode === "add" || row === 0 ? name : name.replace("+", "→")));
    stream.forEach((x, i) => rect(svg, { x: 120 + i * size, y: 6 + row * 36, width: size - 3, height: 28, rx: 3,
      fill: x === 0 ? "#eef0f3" : x > 0 ? "#cfe0fb" : "#f8d7c9", stroke: "#8a939e" }, String(x)));
  });
  el.replaceChildren(svg);
  el.setAttribute("aria-label", `the stream's cells after the embedding, attention and FFN: ${stream.join(", ")} (${mode === "add" ? "each sublayer adds into them" : "each sublayer overwrites them"})`);
}

// The block's main line with its two branches, the current step lit
function fork(el, at) {
  drawn.set(el, () => fork(el, at));
  const [svg, width] = svgOf(el, 150), mid = Math.min(width - 20, 520);
  const lit = (steps) => steps.includes(at) ? COLORS.mark : COLORS.dim;
  const line = (x1, y1, x2, y2, stroke) => {
    const l = document.createElementNS(SVG, "line");
    Object.entries({ x1, y1, x2, y2, stroke, "stroke-width": 3 }).forEach(([k, v]) => l.setAttribute(k, v));
    svg.appendChild(l);
  };
  line(10, 120, mid, 120, lit([0, 3, 6]));
  svg.appendChild(text(10, 144, "the stream (main line)"));
  [[0.12, 0.42, "norm → attention", [1, 2, 3]], [0.55, 0.85, "norm → FFN", [4, 5, 6]]].forEach(([a, b, name, steps]) => {
    const x1 = 10 + a * (mid - 10), x2 = 10 + b * (mid - 10), stroke = lit(steps);
    line(x1, 120, x1, 40, stroke); line(x1, 40, x2, 40, stroke); line(x2, 40, x2, 120, stroke);
    svg.appendChild(text(x1 + 6, 32, name));
    svg.appendChild(text(x2 - 10, 112, "+"));
  });
  el.replaceChildren(svg);
  el.setAttribute("aria-label", "a block: the stream runs straight through; attention and the FFN each fork off a normalized copy and add their output back");
}

// Where the norm sits: on the branch (pre) or on the main line after the add (post)
function placement(el, mode) {
  drawn.set(el, () => placement(el, mode));
  const [svg, width] = svgOf(el, 96), boxW = Math.min(110, (width - 40) / 4);
  const boxes = mode === "pre" ? [["stream", 0], ["norm", 1, true], ["sublayer", 2], ["+ stream", 3]]
    : [["stream", 0], ["sublayer", 1], ["+ stream", 2], ["norm", 3, true]];
  boxes.forEach(([name, i, isNorm]) => rect(svg, { x: 4 + i * (boxW + 10), y: 8, width: boxW, height: 34, rx: 4,
    fill: isNorm ? "#fde68a" : "#eef0f3", stroke: "#8a939e" }, name));
  svg.appendChild(text(4, 72, mode === "pre" ? "gradient path: stream → + stream, no norm on it"
    : "gradient path: crosses the norm in every block"));
  el.replaceChildren(svg);
  el.setAttribute("aria-label", mode === "pre" ? "pre-norm: the norm is on the branch, the residual path has none"
    : "post-norm: the norm is on the residual path after the add");
}

// ---- §01–§02 --------------------------------------------------------------------------------------
async function blockSteps() {
  const w = W("W-block-steps"), d = await api("/api/block-steps", { prompt: prompt() });
  const list = q(w, ".steps");
  list.replaceChildren(...d.steps.map((s) => { const li = document.createElement("li"); li.textContent = s; return li; }));
  bars(q(w, ".chart"), d.blocks.filter((_, i) => i % 3 === 0).map((b) => ({ label: `block ${b.block}`, value: b.stream_out,
    text: `|stream| ${b.stream_in.toFixed(1)} → ${b.stream_out.toFixed(1)}` })), "size of the stream (last token) in and out");
  stepper(w, () => d.steps.length, (at) => {
    [...list.children].forEach((li, i) => { li.classList.toggle("current", i === at); li.classList.toggle("done", i < at); });
    fork(q(w, ".fork"), at);
    say(w, `step ${at + 1} of ${d.steps.length}: ${d.steps[at]}`);
  });
}

// The prompt's tokens in a token menu, keeping its choice where the prompt still has it (at first: first(count));
// returns the chosen position
async function pickToken(select, first) {
  const tokens = (await api("/api/lookup", { prompt: prompt() })).tokens;
  const keep = Math.min(select.value === "" ? first(tokens.length) : +select.value, tokens.length - 1);
  select.replaceChildren(...tokens.map((t) => new Option(`${t.position}: ${fmt.piece(t.piece)}`, t.position)));
  select.value = keep;
  return keep;
}

async function reach() {
  const w = W("W-reach"), keep = await pickToken(document.getElementById("reach-token"), (n) => n - 1);
  const layer = +document.getElementById("reach-layer").value, head = +document.getElementById("reach-head").value;
  const d = await api("/api/reach", { prompt: prompt(), layer, head, token: keep });
  bars(q(w, ".chart"), d.attention.map((a, i) => ({ label: `${i}: ${fmt.piece(d.pieces[i])}`, value: a, text: a.toFixed(3),
    mark: i === keep })), `layer ${layer}, head ${head}: where ${fmt.piece(d.pieces[keep])} looks`);
  const best = d.attention.indexOf(Math.max(...d.attention));
  say(w, `attention reads all ${keep + 1} positions up to ${keep} (most: ${fmt.piece(d.pieces[best])}, ${d.attention[best].toFixed(3)}); the FFN reads only position ${keep}`);
}

async function attention() {
  // first shown: a token in the middle, so that the mask has later tokens to hide
  const w = W("W-attention"), keep = await pickToken(document.getElementById("att-token"), (n) => Math.floor(n / 2));
  const layer = +document.getElementById("att-layer").value, head = +document.getElementById("att-head").value;
  const d = await api("/api/attention", { prompt: prompt(), layer, head, token: keep });
  const heads = ["key", "q·k", `× ${d.scale.toFixed(4)}`, "mask", "softmax weight"];
  q(w, "thead").replaceChildren(row(heads, heads, "th"));
  q(w, "tbody").replaceChildren(...d.pieces.map((p, j) => {
    const tr = row([`${j}: ${fmt.piece(p)}`, d.dots[j].toFixed(3), d.scaled[j].toFixed(3),
      d.allowed[j] ? "kept" : j > keep ? "later token: −∞" : "outside the window: −∞", d.weights[j].toFixed(4)], heads);
    if (j === keep) tr.className = "current";
    else if (!d.allowed[j]) tr.className = "masked";
    return tr;
  }));
  const best = d.weights.indexOf(Math.max(...d.weights));
  say(w, `layer ${layer}, head ${head} (K/V head ${d.kv_head}), query ${fmt.piece(d.pieces[keep])}: scores × 1/√${d.head_dim} = ${d.scale.toFixed(4)}; ` +
    `${d.allowed.filter((a) => !a).length} masked; most weight on ${fmt.piece(d.pieces[best])} (${d.weights[best].toFixed(3)}); ` +
    `output = Σ weight × value: [${d.output_head.join(", ")}, …] (length ${d.output_norm.toFixed(2)})`);
}

// A table row whose cells carry their column's name (narrow screens show it beside each value)
function row(values, labels, cell = "td") {
  const tr = document.createElement("tr");
  values.forEach((v, i) => {
    const td = document.createElement(cell); td.textContent = v; td.dataset.label = labels[i]; tr.appendChild(td);
  });
  return tr;
}

async function split() {
  const w = W("W-split"), dm = +document.getElementById("split-d").value, d = await api(`/api/split?d=${dm}`);
  bars(q(w, ".chart"), [{ label: "attention 4d²", value: d.attention, text: fmt.int(d.attention) },
    { label: "FFN 8d²", value: d.ffn, text: fmt.int(d.ffn), mark: true }], `one block at d = ${dm}`);
  say(w, `d = ${dm}: 12d² = ${fmt.int(d.block)} weights per block; the FFN holds ${fmt.pct(d.ffn_share)} — two thirds at every width`);
}

function norm() {
  const w = W("W-norm"), mode = q(w, "input[name=norm]:checked").value;
  placement(q(w, ".placement"), mode);
  const n = model.norms_on_residual_path[mode];
  say(w, mode === "post"
    ? `post-norm: the residual path itself passes through ${n} normalizations (one per block, N = ${model.config.n_layers}) on the way back to the embedding`
    : `pre-norm: the norm touches only the branches; the gradient crosses ${n} norms on the residual path`);
}

// ---- §03 ------------------------------------------------------------------------------------------
function samplingBars(w, d, what) {
  const toyItems = d.toy.map((t) => ({ label: t.piece, value: what(t), text: what === logitOf ? t.logit.toFixed(1) : fmt.pct(t.probability), dim: !t.kept }));
  bars(q(w, ".toy"), toyItems, "the article's toy");
  bars(q(w, ".real"), d.real.map((t) => ({ label: fmt.piece(t.piece), value: what(t),
    text: what === logitOf ? t.logit.toFixed(2) : fmt.pct(t.probability), dim: !t.kept })), "the real model's top 10");
}
const logitOf = (t) => t.logit, probOf = (t) => t.probability;

async function logits() {
  const w = W("W-logits"), d = await api("/api/sampling", { prompt: prompt() });
  samplingBars(w, d, logitOf);
  say(w, `toy: ${d.toy[0].piece} leads at ${d.toy[0].logit.toFixed(1)}; real: ${fmt.piece(d.real[0].piece)} leads at ${d.real[0].logit.toFixed(2)} over ${fmt.int(d.vocab_size)} tokens`);
}

async function temperature() {
  const w = W("W-temperature"), t = +document.getElementById("temperature").value;
  const d = await api("/api/sampling", { prompt: prompt(), temperature: t });
  samplingBars(w, d, probOf);
  say(w, `T = ${t.toFixed(2)}: ${d.toy[0].piece} ${fmt.pct(d.toy[0].probability)} (toy); real top ${fmt.piece(d.real[0].piece)} ${fmt.pct(d.real[0].probability)} of the full vocabulary`);
}

async function draw() {
  const w = W("W-temperature"), t = +document.getElementById("temperature").value;
  const d = await api("/api/sample", { prompt: prompt(), temperature: t, seed: Math.floor(Math.random() * 1e9) });
  say(w, `drew ${fmt.piece(d.piece)} (id ${d.id}) at T = ${t.toFixed(2)} from all tokens`);
}

async function topK() {
  const w = W("W-top-k"), k = +document.getElementById("top-k").value;
  const d = await api("/api/sampling", { prompt: prompt(), top_k: k });
  samplingBars(w, d, probOf);
  const kept = d.toy.filter((t) => t.kept);
  say(w, `k = ${k}: keeps ${kept.map((t) => t.piece).join(", ")}; cuts ${fmt.pct(1 - kept.reduce((s, t) => s + t.probability, 0))} of the toy's mass, ${fmt.pct(1 - d.real_kept_mass)} of the real model's`);
}

async function topP() {
  const w = W("W-top-p"), p = +document.getElementById("top-p").value;
  const d = await api("/api/sampling", { prompt: prompt(), top_p: p });
  samplingBars(w, d, probOf);
  const kept = d.toy.filter((t) => t.kept);
  say(w, `p = ${p.toFixed(2)}: ${kept.length} of 5 toy candidates survive (${kept.map((t) => t.piece).join(", ")}); the real model keeps ${fmt.int(d.real_kept_count)} of ${fmt.int(d.vocab_size)} tokens`);
}

async function greedyLoop() {
  const w = W("W-greedy-loop");
  status("running greedy decoding …");
  const d = await api("/api/greedy-loop", { prompt: document.getElementById("loop-prompt").value, steps: LOOP_WINDOW,
    sample_at: +document.getElementById("loop-at").value, seed: 1 });
  q(w, ".greedy").textContent = `greedy:\n${d.greedy.text}`;
  q(w, ".forced").textContent = `one sample at step ${d.forced.sample_at}:\n${d.forced.text}`;
  const loop = (l) => (l ? `loops with period ${l.period} from token ${l.start}` : `no loop`);
  const verdict = d.forced.loop ? "the sample changed the text, and greedy decoding after it looped again"
    : d.greedy.loop ? "the sample broke the loop for the rest of the window" : "greedy did not loop in this window";
  say(w, `over ${d.steps} generated tokens: greedy ${loop(d.greedy.loop)}; with one sample at step ${d.forced.sample_at} ` +
    `(${fmt.piece(d.forced.sampled)}): ${loop(d.forced.loop)} — ${verdict}`);
  status("");
}

const LOOP_WINDOW = 64;  // generated tokens the greedy-loop verdict is measured over

// ---- §04–§05 ---------------------------------------------------------------------------------------
let auto = null;
async function autoregress() {
  auto = await api("/api/autoregress", { prompt: prompt(), steps: 12 });
  renderAuto(); renderNaive(); renderFill();
}

function renderAuto() {
  const w = W("W-autoregress"), at = +document.getElementById("auto-step").value;
  const spans = auto.prompt.map((t) => Object.assign(document.createElement("span"), { className: "prompt", textContent: t.piece }));
  auto.steps.slice(0, at).forEach((s, i) => spans.push(Object.assign(document.createElement("span"),
    { className: i === at - 1 ? "deciding" : "generated", textContent: s.piece })));
  q(w, ".sequence").replaceChildren(...spans);
  const s = auto.steps[at - 1];
  say(w, `step ${at}: ran ${s.input_tokens} token${s.input_tokens > 1 ? "s" : ""}, chose ${fmt.piece(s.piece)} at position ${s.position + 1}; it is the input of step ${at + 1}`);
}

function renderNaive() {
  const w = W("W-naive-vs-cached"), mode = q(w, "input[name=naive]:checked").value;
  const key = mode === "naive" ? "naive_work" : "cached_work";
  bars(q(w, ".chart"), auto.steps.map((s) => ({ label: `step ${s.step + 1}`, value: s[key], text: fmt.count(s[key], "token"),
    mark: mode === "naive" })), `${mode}: tokens through all ${auto.n_layers} layers`);
  const total = auto.steps.reduce((a, s) => a + s[key], 0);
  say(w, `${mode}: ${fmt.count(total, "token")} of work for ${fmt.count(auto.steps.length, "new token")}` + (mode === "naive" ? " (the whole prefix, every step)" : " (the prompt once, then only the newest token)"));
}

function renderFill() {
  const w = W("W-cache-fill"), at = +document.getElementById("fill-step").value, s = auto.steps[at - 1];
  const el = q(w, ".grid"), pairs = s.cache_pairs_per_layer, layers = Math.min(3, auto.n_layers);
  drawn.set(el, renderFill);
  const [svg, width] = svgOf(el, layers * 2 * 22 + 8), labelW = 84, size = Math.min(24, (width - labelW - 4) / Math.max(pairs, 1));
  for (let layer = 0; layer < layers; layer++) ["K", "V"].forEach((kind, r) => {  // each layer: its K slots, its V slots
    const y = 4 + (layer * 2 + r) * 22;
    svg.appendChild(text(4, y + 15, `layer ${layer} ${kind}`));
    for (let j = 0; j < pairs; j++) rect(svg, { x: labelW + j * size, y, width: size - 2, height: 18,
      fill: j === pairs - 1 && at > 1 ? COLORS.mark : kind === "K" ? COLORS.bar : "#23804b" });
  });
  el.replaceChildren(svg);
  el.setAttribute("aria-label", `${pairs} K slots and ${pairs} V slots filled in each of ${auto.n_layers} layers (${layers} drawn)`);
  say(w, `after step ${at}: ${fmt.count(pairs, "(K, V) pair")} in every one of ${auto.n_layers} layers — ${fmt.int(pairs * auto.kv_bytes_per_token)} bytes; earlier pairs never rewritten`);
}

async function costToy() {
  const w = W("W-cost-toy"), n = +document.getElementById("cost-toy-n").value, d = await api(`/api/work?prompt=5&new=${n}`);
  lines(q(w, ".chart"), [d.series.map((r) => [r[0], r[1]]), d.series.map((r) => [r[0], r[2]])],
    { labels: ["naive (total)", "cached (total)"], title: "generated tokens" });
  say(w, `${n} generated: naive costs ${d.ratio.toFixed(1)}× cached (${d.ratio_with_prefill.toFixed(1)}× counting the cached prefill)`);
}

async function costGpt2() {
  const w = W("W-cost-gpt2"), n = +document.getElementById("cost-gpt2-n").value, d = await api(`/api/work?prompt=20&new=${n}`);
  lines(q(w, ".chart"), [d.series.map((r) => [r[0], r[1]]), d.series.map((r) => [r[0], r[2]])],
    { labels: ["naive (total)", "cached (total)"], title: "generated tokens" });
  say(w, `${n} generated: naive costs ${d.ratio.toFixed(1)}× cached — quadratic against linear`);
}

async function cacheMemory() {
  const w = W("W-cache-memory"), c = +document.getElementById("context").value, d = await api(`/api/cache-memory?context=${c}`);
  const full = await api("/api/cache-memory?context=2048");
  bars(q(w, ".chart"), [{ label: `${fmt.int(c)} tokens`, value: d.gib, text: fmt.gib(d.gib) },
    { label: "2,048 tokens", value: full.gib, text: fmt.gib(full.gib), dim: true }], "KV cache, one sequence");
  say(w, `${fmt.int(c)} tokens: ${fmt.gib(d.gib)} (2 × ${d.n_layers} layers × ${fmt.int(d.d_model)} × ${fmt.int(c)} × 2 bytes), before a single weight`);
}

async function ring() {
  const w = W("W-ring-overflow");
  status("running a ring buffer and the guarded cache …");
  const d = await api("/api/ring-overflow", { prompt: document.getElementById("ring-prompt").value,
    capacity: +document.getElementById("ring-capacity").value, steps: 10 });
  q(w, ".correct").textContent = `guarded engine: ${d.correct}\n\nguarded cache of ${d.capacity}: ${d.guard}`;
  q(w, ".ring").textContent = `naive ring of ${d.capacity}: ${d.ring}`;
  ringSlots(q(w, ".slots"), d);
  say(w, `the ring overwrote the pairs of positions ${d.overwritten_positions.join(", ") || "none"} without a word; the guarded cache refused instead`);
  status("");
}

// The ring's slots after the run: the position each holds; slots written over more than once marked
function ringSlots(el, d) {
  drawn.set(el, () => ringSlots(el, d));
  const [svg, width] = svgOf(el, 84), size = Math.min(56, (width - 8) / d.capacity);
  svg.appendChild(text(4, 14, `${d.capacity} slots after ${d.written} writes (prompt ${d.prompt_tokens}, then one per step)`));
  d.slots.forEach((p, j) => {
    const over = p !== null && p >= d.capacity;
    rect(svg, { x: 4 + j * size, y: 24, width: size - 4, height: 30, rx: 3, fill: over ? "#f8d7c9" : "#cfe0fb",
      stroke: over ? COLORS.mark : "#8a939e" }, p === null ? "" : `p${p}`);
    svg.appendChild(text(4 + j * size, 72, `${j}`));
  });
  el.replaceChildren(svg);
  el.setAttribute("aria-label", `slots 0 to ${d.capacity - 1} hold positions ${d.slots.join(", ")}; positions ${d.overwritten_positions.join(", ") || "none"} were overwritten`);
}

async function positionBug() {
  const w = W("W-position-bug");
  status("running with positions stuck at 0 …");
  const d = await api("/api/position-bug", { prompt: prompt(), steps: 8 });
  q(w, ".correct").textContent = `positions ${d.correct_positions.join(", ")}:\n${d.correct}`;
  q(w, ".buggy").textContent = `positions ${d.buggy_positions.join(", ")}:\n${d.buggy}`;
  q(w, ".run").setAttribute("aria-pressed", "true");
  say(w, d.correct === d.buggy ? "same text this time — the damage is in the scores" : "the outputs diverge — silently, no exception");
  status("");
}

// ---- §06 ------------------------------------------------------------------------------------------
async function intensity() {
  const w = W("W-intensity"), p = +document.getElementById("intensity-p").value, d = await api(`/api/intensity?prompt=${p}`);
  bars(q(w, ".chart"), [{ label: `prefill P = ${p}`, value: d.prefill, text: `${d.prefill.toFixed(1)} FLOPs/byte` },
    { label: "decode", value: d.decode, text: `${d.decode.toFixed(1)} FLOPs/byte`, mark: true }], "fp16 weights");
  say(w, `P = ${p}: prefill ${d.prefill.toFixed(1)} FLOPs per byte (compute-bound); decode ${d.decode.toFixed(1)} (memory-bound) whatever the model`);
}

async function weightsVsCache() {
  const w = W("W-weights-vs-cache"), c = +document.getElementById("wvc-context").value;
  const d = await api(`/api/concurrency?sequences=1&context=${c}`);
  bars(q(w, ".chart"), [{ label: "weights (175B, fp16)", value: d.weights_gib, text: fmt.gib(d.weights_gib) },
    { label: `one cache, ${fmt.int(c)} tokens`, value: d.one_cache_gib, text: fmt.gib(d.one_cache_gib), mark: true }], "GPT-3");
  say(w, `one sequence at ${fmt.int(c)} tokens: ${fmt.gib(d.one_cache_gib)} of cache beside ${fmt.gib(d.weights_gib)} of weights — a thin sliver`);
}

async function concurrency() {
  const w = W("W-concurrency"), s = +document.getElementById("sequences").value, d = await api(`/api/concurrency?sequences=${s}`);
  bars(q(w, ".chart"), [{ label: "weights (once)", value: d.weights_gib, text: fmt.gib(d.weights_gib) },
    { label: fmt.count(s, "cache"), value: d.caches_gib, text: fmt.gib(d.caches_gib), mark: d.caches_outweigh }], "GPT-3, 2,048 tokens each");
  say(w, `${s} sequence${s > 1 ? "s" : ""}: caches ${fmt.gib(d.caches_gib)} vs weights ${fmt.gib(d.weights_gib)} — ` +
    (d.caches_outweigh ? "caches outweigh the weights" : `weights still heavier (caches win from ${d.crossover})`));
}

async function paramSplit() {
  const w = W("W-param-split"), d = await api("/api/param-split");
  const rest = d.total - d.blocks;
  bars(q(w, ".chart"), [{ label: "FFN (12 blocks)", value: d.ffn, text: fmt.params(d.ffn) },
    { label: "attention (12 blocks)", value: d.attention, text: fmt.params(d.attention) },
    { label: "embeddings + positions", value: rest, text: fmt.params(rest), mark: true }], "GPT-2 small");
  say(w, `${fmt.pct(d.blocks_share)} of ${fmt.int(d.total)} parameters live in the 12 blocks (mostly FFN); the rest is the embedding table`);
}

// ---- §07 ------------------------------------------------------------------------------------------
function loopWalk() {
  const w = W("W-loop-walk"), list = q(w, ".code");
  list.replaceChildren(...model.loop.map(([line]) => { const li = document.createElement("li"); li.textContent = line; return li; }));
  const anchors = { "§00": "#s00", "§03": "#s03", "§04": "#s04", "§05": "#s05", "§06": "#s06" };
  stepper(w, () => model.loop.length, (at) => {
    [...list.children].forEach((li, i) => li.classList.toggle("current", i === at));
    const [line, where] = model.loop[at];
    const p = q(w, ".readout");
    p.replaceChildren(`${line.trim()} — numbers in `);
    const link = Object.assign(document.createElement("a"), { href: anchors[where.slice(0, 3)] || "#s04", textContent: where });
    p.appendChild(link);
  });
}

async function loopCost() {
  const w = W("W-loop-cost"), n = +document.getElementById("lc-new").value;
  const d = await api(`/api/loop-cost?prompt=${Math.max(1, (await api("/api/lookup", { prompt: prompt() })).tokens.length)}&new=${n}`);
  q(w, "tbody").replaceChildren(...d.rows.map((r) => {
    const costText = r.flops !== undefined ? `${fmt.int(r.flops)} FLOPs` : r.bytes !== undefined ? `${fmt.int(r.bytes)} bytes` : `${r.ratio.toFixed(1)}×`;
    return row([r.line, r.what, costText], ["line", "what", "cost"]);
  }));
  say(w, `prompt of ${d.prompt} tokens, ${n} generated: prefill ${fmt.int(d.rows[0].flops)} FLOPs, then ${fmt.int(d.rows[1].flops)} per token`);
}

// ---- §08 ------------------------------------------------------------------------------------------
function reopen() {
  const w = W("W-reopen"), list = q(w, ".recap");
  list.replaceChildren(...[...document.querySelectorAll("main > section[id]")].filter((s) => s.id !== "s08").map((s) => {
    const li = document.createElement("li"), a = document.createElement("a");
    a.href = `#${s.id}`; a.textContent = q(s, "h2").textContent; li.appendChild(a);
    return li;
  }));
  say(w, `${list.children.length} sections, ${document.querySelectorAll("[data-widget]").length} widgets, every number from ${model.name}`);
}

// ---- the page's language: every [data-text] element from prose.js, in place (the widgets keep their state) -------
function setLanguage(lang) {
  const words = PROSE[lang] || PROSE.en;
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  document.querySelectorAll("[data-text]").forEach((el) => { el.textContent = words[el.dataset.text] ?? PROSE.en[el.dataset.text]; });
  document.querySelectorAll("[data-lang]").forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.lang === lang)));
  if (model) reopen();
  try { localStorage.setItem("forwardpass-lang", lang); } catch { /* storage may be off */ }
}

// every slider shows its value beside it, and says it to assistive technology
function showValue(input) {
  let out = input.nextElementSibling;
  if (!out || out.tagName !== "OUTPUT") {
    out = document.createElement("output");
    out.htmlFor = input.id;
    input.after(out);
  }
  out.textContent = input.value;
  input.setAttribute("aria-valuetext", input.value);
}

// ---- wiring ---------------------------------------------------------------------------------------
async function main() {
  let lang = "en";
  try { lang = localStorage.getItem("forwardpass-lang") || "en"; } catch { /* storage may be off */ }
  setLanguage(lang);
  document.querySelectorAll("[data-lang]").forEach((b) => b.addEventListener("click", () => setLanguage(b.dataset.lang)));
  const choices = await api("/api/models"), picker = document.getElementById("model-select");
  picker.replaceChildren(...choices.models.map((name) => new Option(name, name)));
  picker.value = MODEL || choices.models[0];
  picker.addEventListener("change", () => {  // another model: the page again, on it (the language stays)
    status(`loading ${picker.value} …`);
    location.search = `?model=${encodeURIComponent(picker.value)}`;
  });
  if (MODEL) status(`loading ${MODEL} …`);
  model = await api("/api/model");
  status("");
  document.getElementById("model-name").textContent = model.name;
  for (const id of ["reach-layer", "att-layer"]) document.getElementById(id).max = model.config.n_layers - 1;
  for (const id of ["reach-head", "att-head"]) document.getElementById(id).max = model.config.n_heads - 1;
  document.getElementById("loop-at").max = LOOP_WINDOW - 1;
  document.querySelectorAll("input[type=range]").forEach((input) => {
    showValue(input);
    input.addEventListener("input", () => showValue(input));
  });
  let resizing;
  window.addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(() => drawn.forEach((draw) => draw()), 100);
  });
  stages();
  loopWalk();
  norm();
  document.querySelectorAll("input[name=norm]").forEach((r) => r.addEventListener("change", norm));
  const promptWidgets = [lookup, residual, blockSteps, reach, attention, logits, temperature, topK, topP, autoregress, loopCost];
  const refreshPrompt = async () => {
    status("computing …");
    for (const f of promptWidgets) await f();
    status("");
  };
  onInput(document.getElementById("prompt"), refreshPrompt, 350);
  onInput(document.getElementById("lookup-pos"), lookup);
  document.querySelectorAll("input[name=residual]").forEach((r) => r.addEventListener("change", () => residual().catch((e) => status(e.message))));
  ["reach-token", "reach-layer", "reach-head"].forEach((id) => onInput(document.getElementById(id), reach));
  document.getElementById("reach-token").addEventListener("change", () => reach().catch((e) => status(e.message)));
  ["att-layer", "att-head"].forEach((id) => onInput(document.getElementById(id), attention));
  document.getElementById("att-token").addEventListener("change", () => attention().catch((e) => status(e.message)));
  q(W("W-reopen"), ".reopen").addEventListener("click", () => {
    document.getElementById("s00").scrollIntoView();
    document.getElementById("prompt").focus();
    say(W("W-reopen"), "back at the start: change the prompt and follow it through again");
  });
  onInput(document.getElementById("depth-n"), depth);
  onInput(document.getElementById("split-d"), split);
  onInput(document.getElementById("temperature"), temperature);
  q(W("W-temperature"), ".draw").addEventListener("click", () => draw().catch((e) => status(e.message)));
  onInput(document.getElementById("top-k"), topK);
  onInput(document.getElementById("top-p"), topP);
  for (const name of ["W-greedy-loop", "W-ring-overflow", "W-position-bug"]) say(W(name), "not run yet: press the button above");
  q(W("W-greedy-loop"), ".run").addEventListener("click", () => greedyLoop().catch((e) => status(e.message)));
  onInput(document.getElementById("auto-step"), async () => renderAuto(), 0);
  document.querySelectorAll("input[name=naive]").forEach((r) => r.addEventListener("change", renderNaive));
  onInput(document.getElementById("fill-step"), async () => renderFill(), 0);
  onInput(document.getElementById("cost-toy-n"), costToy);
  onInput(document.getElementById("cost-gpt2-n"), costGpt2);
  onInput(document.getElementById("context"), cacheMemory);
  q(W("W-ring-overflow"), ".run").addEventListener("click", () => ring().catch((e) => status(e.message)));
  q(W("W-position-bug"), ".run").addEventListener("click", () => positionBug().catch((e) => status(e.message)));
  onInput(document.getElementById("intensity-p"), intensity);
  onInput(document.getElementById("wvc-context"), weightsVsCache);
  onInput(document.getElementById("sequences"), concurrency);
  onInput(document.getElementById("lc-new"), loopCost);
  await Promise.all([depth(), split(), costToy(), costGpt2(), cacheMemory(), intensity(), weightsVsCache(), concurrency(), paramSplit()]);
  await refreshPrompt();
  reopen();
  document.body.dataset.ready = "true";
}

main().catch((e) => status(`error: ${e.message}`));
