// §06 What it costs: work per byte of weights (on this machine's measured roofline beside two GPUs' published ones),
// one request's cache beside the weights, many requests (GPT-3's formula and the model on this page), many users run
// through the real engine, and where GPT-2 small's parameters live.

import { get, post } from "../lib/api.js";
import { bars } from "../lib/charts.js";
import { byId, debounce, el, q, row, setRange } from "../lib/dom.js";
import { code, fmt, lang, nodes, t } from "../lib/i18n.js";
import { pool } from "../lib/pool.js";
import { bytes, clock, linkTo, one, perSecond, seconds } from "../lib/prose.js";
import { roofline } from "../lib/roofline.js";
import { state } from "../lib/state.js";
import { preset, presets, told } from "../lib/told.js";
import { frame, sectionFrame, widget } from "../lib/widget.js";
import strings from "./cost.strings.js";

export { strings };

const slider = (id, key, min, max, value, step = 1) =>
  `<span class="control"><label for="${id}" data-text="${key}"></label>
  <input id="${id}" type="range" min="${min}" max="${max}" step="${step}" value="${value}"></span>`;

const MANY = { requests: 8, system_tokens: 48, shared: true, own_tokens: 16, new_tokens: 16, pool_blocks: 40 };
const IDS = { requests: "mu-requests", system_tokens: "mu-system", shared: "mu-shared", own_tokens: "mu-own",
  new_tokens: "mu-new", pool_blocks: "mu-pool", arrival: "mu-arrival" };
const as = (settings) => Object.fromEntries(Object.entries(settings).map(([k, v]) => [IDS[k], v]));

export const html = sectionFrame("s06", [
  frame("W-intensity", `
  <p class="machine"></p>
  ${slider("intensity-p", "W-intensity.p", 1, 512, 16)}
  <span class="presets">${preset({ "intensity-p": 1 }, { text: "P = 1" })}${preset({ "intensity-p": 16 }, { text: "P = 16" })}</span>
  <div class="chart bars" role="img"></div>
  <div class="chart roof" role="img"></div>`),
  frame("W-weights-vs-cache", `
  ${slider("wvc-context", "W-weights-vs-cache.context", 64, 2048, 2048, 64)}
  <div class="chart" role="img"></div>`),
  frame("W-concurrency", `
  ${slider("sequences", "W-concurrency.label", 1, 100, 1)}
  <span class="presets">${preset({ sequences: 36 }, "W-concurrency.preset", { n: 36 })}${preset({ sequences: 37 }, "W-concurrency.preset", { n: 37 })}</span>
  <div class="chart" role="img"></div>
  <table class="costs stack here"><caption data-text="W-concurrency.table"></caption>
    <thead><tr><th scope="col" data-text="W-concurrency.col.what"></th><th scope="col" class="gpt3"></th><th scope="col" class="model"></th></tr></thead>
    <tbody></tbody></table>`),
  frame("W-many-users", `
  <div class="mu-controls">
  ${slider("mu-requests", "W-many-users.requests", 1, 32, MANY.requests)}
  ${slider("mu-system", "W-many-users.system", 0, 64, MANY.system_tokens)}
  <span class="control"><label class="check"><input id="mu-shared" type="checkbox" checked> <span data-text="W-many-users.shared"></span></label></span>
  ${slider("mu-own", "W-many-users.own", 1, 48, MANY.own_tokens)}
  ${slider("mu-new", "W-many-users.new", 2, 24, MANY.new_tokens)}
  ${slider("mu-pool", "W-many-users.pool", 8, 128, MANY.pool_blocks)}
  <span class="control"><label for="mu-arrival" data-text="W-many-users.arrival"></label>
  <select id="mu-arrival"><option value="staggered" data-text="W-many-users.arrival.staggered"></option><option value="together" data-text="W-many-users.arrival.together"></option></select></span>
  </div>
  <span class="presets">${preset(as({ ...MANY, arrival: "staggered" }), "W-many-users.preset.shared")}${preset(as({ ...MANY, shared: false, arrival: "staggered" }), "W-many-users.preset.unshared")}${preset(as({ ...MANY, pool_blocks: 10, arrival: "staggered" }), "W-many-users.preset.small")}</span>
  <button type="button" class="run" data-text="W-many-users.run"></button>
  <div class="mu-player"><button type="button" class="play" aria-pressed="false" data-text-aria="W-many-users.play">▶</button>
  ${slider("mu-step", "W-many-users.step", 0, 0, 0)}</div>
  <div class="mu-view"><div class="grid pool" role="img" data-text-aria="W-many-users.pool-empty"></div><dl class="mu-counts"></dl></div>
  <ul class="mu-legend">
    <li><span class="swatch request">3</span> <span data-text="W-many-users.legend.request"></span></li>
    <li><span class="swatch shared">×n</span> <span data-text="W-many-users.legend.shared"></span></li>
    <li><span class="swatch free"></span> <span data-text="W-many-users.legend.free"></span></li>
    <li><span class="swatch cached"></span> <span data-text="W-many-users.legend.cached"></span></li>
  </ul>
  <details class="mu-each"><summary data-text="W-many-users.requests-table"></summary>
  <table class="costs stack"><thead><tr></tr></thead><tbody></tbody></table></details>`),
  frame("W-param-split", `
  <div class="chart" role="img"></div>`, { noControl: true }),
  `<p class="prose bridge" data-text="bridge-s06"></p>`,
]);

const bound = (b) => t(`bound.${b}`);
/** a parameter count of a model this size: 174.6 B, 175 B (in Chinese 1746 亿, 1750 亿) */
const billions = (n) => (lang() === "zh" ? `${(n / 1e8).toFixed(0)} 亿` : `${(n / 1e9).toFixed(1).replace(/\.0$/, "")} B`);
const machineName = (m) => (m.key === "here" ? t("machine.here") : t(`gpu.${m.key}`));
/** a link to the loop's cost on the model as loaded (a later section), or its name where it is not on the page */
const loopCost = () => {
  const w = document.querySelector('[data-widget="W-loop-cost"]');
  return w ? linkTo(w) : t("W-intensity.loop-cost");
};

export function mount() {
  mountIntensity();
  mountWeightsVsCache();
  mountConcurrency();
  mountManyUsers();
  mountParamSplit();
}

// ---- W-intensity: FLOPs per byte, and where that stands on this machine and on two GPUs ---------------------------
function mountIntensity() {
  const intensity = widget("W-intensity", {
    runsOn: "W-intensity.runs-on",
    load: async () => {
      const [now, p16, p1] = await Promise.all([16, 1].reduce((all, p) => [...all, get("/api/intensity", { prompt: p })],
        [get("/api/intensity", { prompt: byId("intensity-p").value })]));
      return { now, p16, p1 };
    },
    draw({ now, p16, p1 }) {
      const here = now.machines[0];
      q(intensity.el, ".machine").replaceChildren(...nodes("W-intensity.machine", {
        device: t(`device.${here.device}`), threads: here.threads ?? "", bw: perSecond(here.bandwidth, "bytes"),
        rate: perSecond(here.flops, "flops"), dtype: code(here.dtype), shape: code(here.matmul), ridge: one(here.ridge) }));
      const value = (v) => t("unit.fpb", { v: one(v) });
      bars(q(intensity.el, ".chart.bars"), [
        { label: t("W-intensity.prefill", { p: now.prompt }), value: now.prefill, text: value(now.prefill) },
        { label: t("W-intensity.decode"), value: now.decode, text: value(now.decode), mark: true }],
      t("W-intensity.chart"), { axis: t("W-intensity.axis") });
      const guides = now.prompt === 1 ? [{ x: 1, label: t("W-intensity.guide-both", { v: one(now.decode) }) }]
        : [{ x: now.decode, label: t("W-intensity.guide-decode", { v: one(now.decode) }) },
          { x: now.prefill, label: t("W-intensity.guide-prefill", { p: now.prompt, v: one(now.prefill) }) }];
      roofline(q(intensity.el, ".chart.roof"), now.machines.map((m) => ({ ...m,
        legend: t(m.key === "here" ? "W-intensity.legend-here" : "W-intensity.legend-gpu",
          { name: machineName(m), ridge: one(m.ridge) }) })), guides,
      { x: t("W-intensity.roof-x"), y: t("W-intensity.roof-y") });
      intensity.say(["W-intensity.readout", { p: now.prompt, prefill: one(now.prefill), decode: one(now.decode),
        bound: bound(here.prefill_bound), dbound: bound(here.decode_bound), ridge: one(here.ridge) }]);
      const at16 = p16.machines[0];
      told(intensity,
        [["W-intensity.told-1", { v: one(p1.prefill), bound: bound(p1.machines[0].prefill_bound) }],
          [`W-intensity.told-16-${at16.prefill_bound}`, { v: one(p16.prefill), ridge: one(at16.ridge) }]],
        [...p16.machines.slice(1).map((m) => ["W-intensity.told-gpu", { name: machineName(m),
          rate: perSecond(m.flops, "flops"), bw: perSecond(m.bandwidth, "bytes"), ridge: one(m.ridge),
          bound: bound(m.prefill_bound), from: m.compute_bound_from }]),
        ["W-intensity.told-where", { here: at16.prefill_bound === "compute" }]],
        ["W-intensity.told-decode", { v: one(p16.decode), ridge: one(at16.ridge),
          all: p16.machines.every((m) => m.decode_bound === "memory"), link: loopCost() }]);
    },
  });
  intensity.el.dataset.source = "formula";
  intensity.el.dataset.measured = "";
  presets(intensity.el);
  byId("intensity-p").addEventListener("input", debounce(() => intensity.run(), 120));
}

// ---- W-weights-vs-cache: one sequence's cache beside GPT-3's weights -----------------------------------------------
function mountWeightsVsCache() {
  const wvc = widget("W-weights-vs-cache", {
    runsOn: "runs-on.gpt3",
    load: async () => {
      const [now, full] = await Promise.all([get("/api/concurrency", { sequences: 1, context: byId("wvc-context").value }),
        get("/api/concurrency", { sequences: 1, context: 2048 })]);
      return { now, full };
    },
    draw({ now, full }) {
      bars(q(wvc.el, ".chart"), [
        { label: t("W-weights-vs-cache.weights", { params: billions(now.parameters) }), value: now.weights_gib,
          text: fmt.gib(now.weights_gib) },
        { label: t("W-weights-vs-cache.cache", { n: now.context }), value: now.one_cache_gib,
          text: fmt.gib(now.one_cache_gib), mark: true }], t("W-weights-vs-cache.chart"), { axis: t("W-weights-vs-cache.axis") });
      wvc.say(["W-weights-vs-cache.readout", { n: now.context, cache: fmt.gib(now.one_cache_gib),
        weights: fmt.gib(now.weights_gib), share: fmt.pct(now.one_cache_gib / now.weights_gib) }]);
      told(wvc, [["W-weights-vs-cache.told", { n: full.context, cache: fmt.gib(full.one_cache_gib),
        weights: fmt.gib(full.weights_gib), share: fmt.pct(full.one_cache_gib / full.weights_gib) }],
      ["W-weights-vs-cache.named", { params: billions(full.parameters), named: billions(full.named_parameters),
        namedGib: fmt.gib(full.named_weights_gib) }]]);
    },
  });
  wvc.el.dataset.source = "formula";
  byId("wvc-context").addEventListener("input", debounce(() => wvc.run(), 120));
}

// ---- W-concurrency: weights once, a cache per sequence; GPT-3's formula beside the model on this page --------------
function mountConcurrency() {
  const concurrency = widget("W-concurrency", {
    runsOn: "W-concurrency.runs-on", follows: ["model"],
    load: async () => {
      const now = await get("/api/concurrency", { sequences: byId("sequences").value });
      const below = now.crossover - 1;
      const [under, over, model] = await Promise.all([get("/api/concurrency", { sequences: below }),
        get("/api/concurrency", { sequences: now.crossover }), get("/api/model-cache", {}, { model: true })]);
      return { now, under, over, model };
    },
    draw({ now, under, over, model }) {
      bars(q(concurrency.el, ".chart"), [
        { label: t("W-concurrency.weights"), value: now.weights_gib, text: fmt.gib(now.weights_gib) },
        { label: t("W-concurrency.caches", { n: now.sequences }), value: now.caches_gib, text: fmt.gib(now.caches_gib),
          mark: now.caches_outweigh }], t("W-concurrency.chart"), { axis: t("W-concurrency.axis") });
      const verdict = now.caches_outweigh ? t("W-concurrency.outweigh") : t("W-concurrency.heavier", { x: now.crossover });
      concurrency.say(["W-concurrency.readout", { n: now.sequences, caches: fmt.gib(now.caches_gib),
        weights: fmt.gib(now.weights_gib), verdict }]);
      // the table: GPT-3 (formula, fp16) beside the model on this page (its pool's dtype, its weights as loaded)
      const name = state.info ? state.info.display_name : "";
      q(concurrency.el, "th.gpt3").textContent = t("W-concurrency.gpt3");
      q(concurrency.el, "th.model").textContent = t("W-concurrency.model", { model: name });
      const heads = [t("W-concurrency.col.what"), t("W-concurrency.gpt3"), t("W-concurrency.model", { model: name })];
      const gpt3Weights = now.weights_gib * 2 ** 30, gpt3Seq = now.one_cache_gib * 2 ** 30;
      q(concurrency.el, "tbody").replaceChildren(
        row([t("W-concurrency.row.per-token"), bytes(now.per_token), bytes(model.per_token)], heads),
        row([t("W-concurrency.row.per-seq"), t("W-concurrency.at", { bytes: bytes(gpt3Seq), n: fmt.int(now.context) }),
          t("W-concurrency.at", { bytes: bytes(model.per_sequence), n: fmt.int(model.context) })], heads),
        row([t("W-concurrency.row.weights"), bytes(gpt3Weights), bytes(model.weights)], heads),
        row([t("W-concurrency.row.crossover"), fmt.int(now.crossover), fmt.int(model.crossover)], heads));
      told(concurrency,
        ["W-concurrency.told", { weights: fmt.gib(now.weights_gib), cache: fmt.gib(now.one_cache_gib),
          ratio: one(now.weights_over_one_cache), below: under.sequences, above: over.sequences,
          cBelow: fmt.gib(under.caches_gib), cAbove: fmt.gib(over.caches_gib) }],
        ["W-concurrency.told-model", { model: name, perToken: bytes(model.per_token), dtype: code(model.kv_dtype),
          layers: model.n_layers, heads: model.kv_heads, dim: model.head_dim, context: fmt.int(model.context),
          perSeq: bytes(model.per_sequence), weights: bytes(model.weights), crossover: model.crossover }]);
    },
  });
  concurrency.el.dataset.source = "formula";
  presets(concurrency.el);
  byId("sequences").addEventListener("input", debounce(() => concurrency.run(), 120));
}

// ---- W-param-split: where GPT-2 small's parameters live -----------------------------------------------------------
function mountParamSplit() {
  const split = widget("W-param-split", {
    runsOn: "runs-on.gpt2",
    load: () => get("/api/param-split"),
    draw(d) {
      bars(q(split.el, ".chart"), [
        { label: t("W-param-split.ffn"), value: d.ffn, text: fmt.params(d.ffn) },
        { label: t("W-param-split.attention"), value: d.attention, text: fmt.params(d.attention) },
        { label: t("W-param-split.norms"), value: d.block_norms, text: fmt.params(d.block_norms), dim: true },
        { label: t("W-param-split.embeddings"), value: d.outside, text: fmt.params(d.outside), mark: true }],
      t("W-param-split.chart"), { axis: t("W-param-split.axis") });
      split.say(["W-param-split.readout", { total: fmt.int(d.total), blocks: fmt.int(d.blocks), ffn: fmt.int(d.ffn),
        attention: fmt.int(d.attention), outside: fmt.int(d.outside) }]);
      told(split, ["W-param-split.told", { n: d.n_layers, share: fmt.pct(d.blocks_share),
        ffnShare: fmt.pct(d.ffn / d.blocks), outShare: fmt.pct(d.outside / d.total) }]);
    },
  });
  split.el.dataset.source = "formula";
}

// ---- W-many-users: requests through the real engine, its pool drawn step by step ----------------------------------
function mountManyUsers() {
  const root = document.querySelector('[data-widget="W-many-users"]');
  const stepInput = byId("mu-step"), playButton = q(root, ".play");
  let shown = null, timer = null, animate = false;  // animate: the reader pressed Run (a run at load shows its peak)
  let fresh = false;  // the reader asked for a new run (Run, a preset), not the remembered one

  const settings = () => ({ requests: +byId("mu-requests").value, system_tokens: +byId("mu-system").value,
    shared: byId("mu-shared").checked, own_tokens: +byId("mu-own").value, new_tokens: +byId("mu-new").value,
    pool_blocks: +byId("mu-pool").value, arrival: byId("mu-arrival").value });

  const many = widget("W-many-users", {
    runsOn: "W-many-users.runs-on", follows: ["model"], auto: false, first: true, idle: "not-run",
    load: () => post("/api/many-users", settings(), { fresh }),  // the opening run: the one the explorer made
    draw(d) {
      if (d !== shown) {  // a new run: its busiest step; after Run, its steps played from the first up to that one
        shown = d;        // (unless the reader asked for less motion). The slider counts steps from 1, as the counts do
        stop();
        const busiest = d.steps.findIndex((s) => s.used === d.peak_used) + 1;
        setRange(stepInput, { min: 1, max: d.steps.length, value: busiest });
        if (animate && !matchMedia("(prefers-reduced-motion: reduce)").matches) play(true, busiest);
        animate = false;
      }
      renderStep(d);
      tellRun(many, d);
    },
  });
  many.el.dataset.source = "model";
  many.el.dataset.measured = "";

  function renderStep(d) { drawStep(root, d, +stepInput.value - 1); }

  /** the steps one after another from the one shown (from the first: `fromStart`, or when at the end) to `until` */
  function play(fromStart = false, until = null) {
    stop();
    if (!shown) return;
    const last = until ?? shown.steps.length;
    if (fromStart || +stepInput.value >= shown.steps.length) setRange(stepInput, { value: 1 });
    playButton.setAttribute("aria-pressed", "true");
    playButton.textContent = "❚❚";
    playButton.setAttribute("aria-label", t("W-many-users.pause"));
    const delay = Math.max(60, Math.min(300, 4000 / shown.steps.length));
    timer = setInterval(() => {
      const next = +stepInput.value + 1;
      if (next > last) return stop();
      setRange(stepInput, { value: next });
      renderStep(shown);
    }, delay);
  }
  function stop() {
    clearInterval(timer);
    timer = null;
    playButton.setAttribute("aria-pressed", "false");
    playButton.textContent = "▶";
    playButton.setAttribute("aria-label", t("W-many-users.play"));
  }
  playButton.addEventListener("click", () => (timer ? stop() : play()));
  const runNow = async () => {
    animate = fresh = true;
    try { await many.run(); } finally { fresh = false; }
  };
  stepInput.addEventListener("input", () => { stop(); if (shown) renderStep(shown); });

  const sync = presets(root, () => { many.outdate("inputs"); runNow(); });
  const moved = () => { sync(); many.outdate("inputs"); };
  Object.values(IDS).forEach((id) => byId(id).addEventListener(byId(id).tagName === "SELECT" || byId(id).type === "checkbox" ? "change" : "input", moved));
  q(root, ".run").addEventListener("click", runNow);
}

/** the run's step `at` (the slider's): the pool's blocks, the counts beside them, and every request's row */
function drawStep(root, d, at) {
  const k = Math.min(at, d.steps.length - 1), s = d.steps[k];
  pool(q(root, ".grid.pool"), s);
  const waitingNow = s.requests.filter((r) => r.state === "preempted").length;
  const counts = [["step", t("W-many-users.of", { a: k + 1, b: d.steps.length })], ["time", seconds(s.t)],
    ["used", t("W-many-users.of", { a: s.used, b: d.pool_blocks })], ["shared", s.shared], ["free", s.free],
    ["running", s.running], ["waiting", s.waiting + (waitingNow ? ` (${waitingNow})` : "")],
    ["preempted", s.preemptions], ["generated", fmt.int(s.generated)],
    ["rate", fmt.int(s.generated / Math.max(s.t, 1e-9))]];
  q(root, ".mu-counts").replaceChildren(...counts.flatMap(([key, v]) => [el("dt", { textContent: t(`W-many-users.count.${key}`) }),
    el("dd", { textContent: String(v) })]));
  const cols = ["request", "prompt", "cached", "state", "blocks", "generated", "ttft", "rate", "preempted"];
  const heads = cols.map((c) => t(`W-many-users.col.${c}`));
  q(root, "thead tr").replaceChildren(...heads.map((h) => el("th", { scope: "col", textContent: h })));
  q(root, "tbody").replaceChildren(...d.requests.map((r, i) => {
    const now = s.requests[i];
    return row([String(i + 1), fmt.int(r.prompt_tokens), fmt.int(r.cached_tokens), t(`W-many-users.state.${now.state}`),
      now.shared ? `${now.blocks} (${now.shared})` : String(now.blocks), String(now.generated), seconds(r.ttft_s),
      fmt.int(r.tokens_per_s), String(r.preemptions)], heads);
  }));
}

/** the readout and the prose, from the whole run: what was shared, what waited, how long the first token took, and
 * whether the server's /metrics counted the same */
function tellRun(many, d) {
  const c = d.counted, m = d.metrics, ttfts = d.requests.map((r) => r.ttft_s).sort((a, b) => a - b);
  many.say(["W-many-users.readout", { requests: d.requests.length, generated: c.generation_tokens,
    seconds: seconds(d.seconds), rate: fmt.int(d.tokens_per_s), peak: d.peak_used, blocks: d.pool_blocks,
    shared: d.peak_shared, preemptions: c.preemptions }]);
  const s = d.settings, full = Math.floor(s.system_tokens / d.block_size), rest = s.system_tokens % d.block_size;
  const median = ttfts[Math.floor((ttfts.length - 1) / 2)];
  told(many,
    s.shared && s.system_tokens > 0 && d.prefix_cache.first_hits > 0 ? [["W-many-users.told-shared", {
      system: s.system_tokens, full, shared: d.peak_shared, hits: d.prefix_cache.first_hits }],
    rest ? ["W-many-users.told-partial", { rest }] : null]
      : s.shared && s.system_tokens >= d.block_size && s.arrival === "together" ? ["W-many-users.told-together", {}]
        : !s.shared && s.system_tokens > 0 ? ["W-many-users.told-unshared", { total: fmt.int(c.prompt_tokens) }] : null,
    c.preemptions ? [["W-many-users.told-preempted", { n: c.preemptions }], d.prefix_cache.resumed_hits > 0
      && ["W-many-users.told-resumed", { again: fmt.int(d.prefix_cache.resumed_hits), metrics: code("/metrics") }]]
      : ["W-many-users.told-room", { peak: d.peak_used, blocks: d.pool_blocks }],
    ["W-many-users.told-ttft", { min: seconds(ttfts[0]), max: seconds(ttfts[ttfts.length - 1]), median: seconds(median) }],
    [d.agrees ? ["W-many-users.metrics-agree", { metrics: code("/metrics"), prompt: fmt.int(m.prompt_tokens),
      generated: fmt.int(m.generation_tokens), preemptions: m.preemptions, ttft: m.ttft_count, used: m.blocks_used }]
      : ["W-many-users.metrics-differ", { metrics: code("/metrics"), which: Object.keys(c).filter((k) =>
        JSON.stringify(c[k]) !== JSON.stringify(m[k])).map((k) => code(k)) }],
    ["W-many-users.measured", { time: clock(d.measured_at) }]]);
}
