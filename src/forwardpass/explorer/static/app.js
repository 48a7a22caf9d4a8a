// The explorer's page: it draws; every number comes from the engine's JSON endpoints.

const W = (name) => document.querySelector(`[data-widget="${name}"]`);
const q = (root, sel) => root.querySelector(sel);
const SVG = "http://www.w3.org/2000/svg";

async function api(path, body) {
  const init = body ? { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) } : {};
  const response = await fetch(path, init);
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

const fmt = {
  params: (n) => (n >= 1e9 ? `${(n / 1e9).toFixed(1)}B` : `${(n / 1e6).toFixed(1)}M`),
  pct: (x) => `${(100 * x).toFixed(1)}%`,
  gib: (x) => `${x.toFixed(2)} GiB`,
  int: (n) => n.toLocaleString("en-US"),
  piece: (s) => JSON.stringify(s),
};

function say(widget, text) { q(widget, ".readout").textContent = text; }

function status(text) { document.getElementById("status").textContent = text; }

// Horizontal bars: items [{label, value, text, mark, dim}], drawn into el (an element with role="img").
function bars(el, items, title = "") {
  const max = Math.max(...items.map((d) => Math.abs(d.value)), 1e-12);
  const rowH = 22, labelW = 150, width = 560, textW = 150;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${items.length * rowH + (title ? 20 : 4)}`);
  let y = 2;
  if (title) { svg.appendChild(text(4, 14, title, "600")); y = 20; }
  items.forEach((d, i) => {
    const top = y + i * rowH;
    svg.appendChild(text(4, top + 15, d.label.length > 20 ? d.label.slice(0, 19) + "…" : d.label));
    const rect = document.createElementNS(SVG, "rect");
    const w = Math.max(1, ((width - labelW - textW) * Math.abs(d.value)) / max);
    Object.entries({ x: labelW, y: top + 3, width: w, height: rowH - 6, rx: 2,
      fill: d.mark ? "#d4572a" : d.dim ? "#c7ccd3" : "#2f6fde" }).forEach(([k, v]) => rect.setAttribute(k, v));
    svg.appendChild(rect);
    svg.appendChild(text(labelW + w + 6, top + 15, d.text));
  });
  el.replaceChildren(svg);
  el.setAttribute("aria-label", `${title ? title + ": " : ""}${items.map((d) => `${d.label} ${d.text}`).join("; ")}`);
}

function text(x, y, s, weight = "400") {
  const t = document.createElementNS(SVG, "text");
  t.setAttribute("x", x); t.setAttribute("y", y); t.setAttribute("font-size", "12"); t.setAttribute("font-weight", weight);
  t.textContent = s;
  return t;
}

// A line chart of [x, y] series, with an optional marker at x = markX.
function lines(el, series, { labels, markX, title }) {
  const width = 520, height = 200, pad = 36;
  const xs = series.flatMap((s) => s.map((p) => p[0])), ys = series.flatMap((s) => s.map((p) => p[1]));
  const [x0, x1, y1] = [Math.min(...xs), Math.max(...xs), Math.max(...ys, 1e-12)];
  const X = (x) => pad + ((x - x0) / Math.max(x1 - x0, 1)) * (width - 2 * pad);
  const Y = (y) => height - pad + 10 - (y / y1) * (height - pad - 10);
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const colors = ["#2f6fde", "#d4572a", "#2a9d5c"];
  series.forEach((s, i) => {
    const path = document.createElementNS(SVG, "polyline");
    path.setAttribute("points", s.map((p) => `${X(p[0])},${Y(p[1])}`).join(" "));
    Object.entries({ fill: "none", stroke: colors[i], "stroke-width": 2 }).forEach(([k, v]) => path.setAttribute(k, v));
    svg.appendChild(path);
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
  q(w, "tbody").replaceChildren(...data.tokens.map((t) => {
    const tr = document.createElement("tr");
    if (t.position === at) tr.className = "current";
    else if (t.id === chosen.id) tr.className = "repeat";
    [t.position, t.id, fmt.piece(t.piece), `[${t.row.join(", ")}, …]`].forEach((v) => {
      const td = document.createElement("td"); td.textContent = v; tr.appendChild(td);
    });
    return tr;
  }));
  const same = data.tokens.filter((t) => t.id === chosen.id).map((t) => t.position);
  say(w, `position ${at}: ${fmt.piece(chosen.piece)} is id ${chosen.id}, row ${chosen.id} of the ${fmt.int(data.vocab_size)}-row table` +
    (same.length > 1 ? `; positions ${same.join(" and ")} share that id and that row — no position yet` : ""));
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
  const shape = d.stream_shapes[0].join(" × ");
  say(w, `${mode}: the stream keeps its shape (${shape}) at all ${d.stream_shapes.length} boundaries; top next token ${fmt.piece(d.next[0].piece)} at ${fmt.pct(d.next[0].probability)}` +
    (mode === "replace" ? " — earlier blocks' work erased" : ""));
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
    say(w, `step ${at + 1} of ${d.steps.length}: ${d.steps[at]}`);
  });
}

async function reach() {
  const w = W("W-reach"), select = document.getElementById("reach-token");
  const tokens = (await api("/api/lookup", { prompt: prompt() })).tokens;
  const keep = Math.min(select.value === "" ? tokens.length - 1 : +select.value, tokens.length - 1);
  select.replaceChildren(...tokens.map((t) => new Option(`${t.position}: ${fmt.piece(t.piece)}`, t.position)));
  select.value = keep;
  const layer = +document.getElementById("reach-layer").value, head = +document.getElementById("reach-head").value;
  const d = await api("/api/reach", { prompt: prompt(), layer, head, token: keep });
  bars(q(w, ".chart"), d.attention.map((a, i) => ({ label: `${i}: ${fmt.piece(d.pieces[i])}`, value: a, text: a.toFixed(3),
    mark: i === keep })), `layer ${layer}, head ${head}: where ${fmt.piece(d.pieces[keep])} looks`);
  const best = d.attention.indexOf(Math.max(...d.attention));
  say(w, `attention reads all ${keep + 1} positions up to ${keep} (most: ${fmt.piece(d.pieces[best])}, ${d.attention[best].toFixed(3)}); the FFN reads only position ${keep}`);
}

async function split() {
  const w = W("W-split"), dm = +document.getElementById("split-d").value, d = await api(`/api/split?d=${dm}`);
  bars(q(w, ".chart"), [{ label: "attention 4d²", value: d.attention, text: fmt.int(d.attention) },
    { label: "FFN 8d²", value: d.ffn, text: fmt.int(d.ffn), mark: true }], `one block at d = ${dm}`);
  say(w, `d = ${dm}: 12d² = ${fmt.int(d.block)} weights per block; the FFN holds ${fmt.pct(d.ffn_share)} — two thirds at every width`);
}

function norm() {
  const w = W("W-norm"), mode = q(w, "input[name=norm]:checked").value;
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
  const d = await api("/api/greedy-loop", { prompt: document.getElementById("loop-prompt").value, steps: 24,
    sample_at: +document.getElementById("loop-at").value, seed: 1 });
  q(w, ".greedy").textContent = d.greedy.text;
  q(w, ".forced").textContent = d.forced.text;
  const loop = (l) => (l ? `loops with period ${l.period} from token ${l.start}` : "no loop");
  say(w, `greedy: ${loop(d.greedy.loop)}; one sample at step ${d.forced.sample_at} (${fmt.piece(d.forced.sampled)}): ${loop(d.forced.loop)}`);
  status("");
}

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
  bars(q(w, ".chart"), auto.steps.map((s) => ({ label: `step ${s.step + 1}`, value: s[key], text: `${s[key]} tokens`,
    mark: mode === "naive" })), `${mode}: tokens through all ${auto.n_layers} layers`);
  const total = auto.steps.reduce((a, s) => a + s[key], 0);
  say(w, `${mode}: ${total} tokens of work for ${auto.steps.length} new tokens` + (mode === "naive" ? " (the whole prefix, every step)" : " (the prompt once, then only the newest token)"));
}

function renderFill() {
  const w = W("W-cache-fill"), at = +document.getElementById("fill-step").value, s = auto.steps[at - 1];
  const pairs = s.cache_pairs_per_layer, cols = Math.max(pairs, 1), size = Math.min(24, 500 / cols);
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${cols * size + 4} ${6 * size + 4}`);
  for (let layer = 0; layer < 6; layer++) for (let j = 0; j < pairs; j++) {
    const r = document.createElementNS(SVG, "rect");
    Object.entries({ x: 2 + j * size, y: 2 + layer * size, width: size - 2, height: size - 2,
      fill: j === pairs - 1 && at > 1 ? "#d4572a" : "#2f6fde" }).forEach(([k, v]) => r.setAttribute(k, v));
    svg.appendChild(r);
  }
  q(w, ".grid").replaceChildren(svg);
  q(w, ".grid").setAttribute("aria-label", `${pairs} pairs in each of ${auto.n_layers} layers (6 drawn)`);
  say(w, `after step ${at}: ${pairs} (K, V) pairs in every one of ${auto.n_layers} layers — ${fmt.int(pairs * auto.kv_bytes_per_token)} bytes; earlier pairs never rewritten`);
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
  const d = await api("/api/ring-overflow", { prompt: "One two three four five", capacity: +document.getElementById("ring-capacity").value, steps: 10 });
  q(w, ".correct").textContent = `guarded engine: ${d.correct}\n\nguarded cache of ${d.capacity}: ${d.guard}`;
  q(w, ".ring").textContent = `naive ring of ${d.capacity}: ${d.ring}`;
  say(w, `the ring overwrote the pairs of positions ${d.overwritten_positions.join(", ") || "none"} without a word; the guarded cache refused instead`);
  status("");
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
    { label: `${s} caches`, value: d.caches_gib, text: fmt.gib(d.caches_gib), mark: d.caches_outweigh }], "GPT-3, 2,048 tokens each");
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
    const tr = document.createElement("tr");
    const costText = r.flops !== undefined ? `${fmt.int(r.flops)} FLOPs` : r.bytes !== undefined ? `${fmt.int(r.bytes)} bytes` : `${r.ratio.toFixed(1)}×`;
    [r.line, r.what, costText].forEach((v) => { const td = document.createElement("td"); td.textContent = v; tr.appendChild(td); });
    return tr;
  }));
  say(w, `prompt of ${d.prompt} tokens, ${n} generated: prefill ${fmt.int(d.rows[0].flops)} FLOPs, then ${fmt.int(d.rows[1].flops)} per token`);
}

// ---- wiring ---------------------------------------------------------------------------------------
async function main() {
  model = await api("/api/model");
  document.getElementById("model-name").textContent = model.name;
  document.getElementById("reach-layer").max = model.config.n_layers - 1;
  document.getElementById("reach-head").max = model.config.n_heads - 1;
  stages();
  loopWalk();
  norm();
  document.querySelectorAll("input[name=norm]").forEach((r) => r.addEventListener("change", norm));
  const promptWidgets = [lookup, residual, blockSteps, reach, logits, temperature, topK, topP, autoregress, loopCost];
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
  onInput(document.getElementById("depth-n"), depth);
  onInput(document.getElementById("split-d"), split);
  onInput(document.getElementById("temperature"), temperature);
  q(W("W-temperature"), ".draw").addEventListener("click", () => draw().catch((e) => status(e.message)));
  onInput(document.getElementById("top-k"), topK);
  onInput(document.getElementById("top-p"), topP);
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
  document.body.dataset.ready = "true";
}

main().catch((e) => status(`error: ${e.message}`));
