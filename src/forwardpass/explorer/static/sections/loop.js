// §04 The loop: each output becomes the next input; the naive and the cached loop run here side by side, their work
// counted and their steps timed; then the article's token counts on its toy and on GPT-2 small.

import { get, post } from "../lib/api.js";
import { COLORS, lines } from "../lib/charts.js";
import { columns } from "../lib/compare.js";
import { byId, debounce, q, setRange, tokenSpan } from "../lib/dom.js";
import { fmt, hasBytes, isBlank, nodes, piece, pieceLabel, t } from "../lib/i18n.js";
import { clock, linkTo } from "../lib/prose.js";
import { state } from "../lib/state.js";
import { preset, presets, told, times } from "../lib/told.js";
import { frame, sectionFrame, widget } from "../lib/widget.js";
import strings from "./loop.strings.js";

export { strings };

/** a preset button setting one control (lib/told.js: presets) */

const STEPS = 12;  // greedy steps W-autoregress, W-naive-vs-cached and W-cache-fill show
const NAIVE = COLORS.bar, CACHED = COLORS.mark;  // as lines() colours its first and second series

export const html = sectionFrame("s04", [
  frame("W-autoregress", `
  <span class="control"><label for="auto-step" data-text="loop.step"></label>
  <input id="auto-step" type="range" min="1" max="${STEPS}" value="1"></span>
  <p class="sequence"></p>`),
  frame("W-naive-vs-cached", `
  <span class="control"><label for="nvc-step" data-text="loop.step"></label>
  <input id="nvc-step" type="range" min="1" max="${STEPS}" value="${STEPS}"></span>
  <button type="button" class="run" data-text="W-naive-vs-cached.again"></button>
  <div class="lit">
    <p class="lit-row naive"><span class="lit-name" data-text="W-naive-vs-cached.naive-runs"></span> <span class="chips"></span></p>
    <p class="lit-row cached"><span class="lit-name" data-text="W-naive-vs-cached.cached-runs"></span> <span class="chips"></span></p>
  </div>
  <div class="chart work" role="img"></div>
  <div class="chart time" role="img"></div>`),
  frame("W-cost-toy", `
  <span class="control"><label for="cost-toy-n" data-text="loop.generated"></label>
  <input id="cost-toy-n" type="range" min="1" max="40" value="12"></span>
  <span class="presets">${preset({ "cost-toy-n": 1 }, "W-cost-toy.preset-1")}${preset({ "cost-toy-n": 12 }, "W-cost-toy.preset-12")}</span>
  <div class="chart" role="img"></div>`),
  frame("W-cost-gpt2", `
  <span class="control"><label for="cost-gpt2-n" data-text="loop.generated"></label>
  <input id="cost-gpt2-n" type="range" min="1" max="200" value="100"></span>
  <span class="presets">${preset({ "cost-gpt2-n": 100 }, "W-cost-gpt2.preset-100")}</span>
  <div class="chart" role="img"></div>`),
  `<p class="prose bridge" data-text="bridge-s04"></p>`,
]);

/** twelve greedy steps on the page's prompt: each step's token, position, cache and work (shared with §05) */
export const autoregress = () => post("/api/autoregress", { prompt: state.prompt, steps: STEPS });

/** a token piece as a chip: its text, its newlines and tabs made visible; raw bytes and whitespace alone written as the
 * whole page writes them (i18n.pieceLabel: ⟨E7⟩, ␣, ↵) */
export function chip(s, className) {
  const shown = hasBytes(s) || isBlank(s) ? pieceLabel(s) : s.replace(/\n/g, "\\n").replace(/\t/g, "\\t");
  const span = tokenSpan(shown);
  span.className = `token ${className}`;
  return span;
}

const ms = (s) => fmt.fixed(1000 * s, 1);

/** naive ÷ cached, the page's two counts side by side: the prefill in both loops, and the steps after the prompt */
export const ratios = (withPrefill, afterPrompt) => nodes("ratio.both", { w: times(withPrefill), a: times(afterPrompt) });

/** the work the article's presets count (5-token toy at 1 and 12 tokens, GPT-2 small's 20 at 100), one request each */
const PRESETS = [[5, 1], [5, 12], [20, 100]];
const presetWork = () => Promise.all(PRESETS.map(([prompt, n]) => get("/api/work", { prompt, new: n })));

export function mount() {
  // ---- W-autoregress: step t's output is part of step t + 1's input
  const auto = widget("W-autoregress", {
    runsOn: "prompt", follows: ["prompt", "model"],
    load: autoregress,
    draw(d) {
      const at = setRange(byId("auto-step"), { max: d.steps.length }), s = d.steps[at - 1];
      const chips = d.prompt.map((x) => chip(x.piece, "prompt"));
      d.steps.slice(0, at).forEach((x, i) => chips.push(chip(x.piece, i === at - 1 ? "deciding" : "generated")));
      q(auto.el, ".sequence").replaceChildren(...chips);
      const last = at === d.steps.length;
      auto.say([at === 1 ? "W-autoregress.first" : "W-autoregress.later",
        { at, n: s.chosen_position, k: at - 1, piece: piece(s.piece), position: s.chosen_position }],
      last ? ["W-autoregress.last", { steps: d.steps.length }] : ["W-autoregress.next", { next: at + 1 }]);
      const r = d.repeat, greedy = document.querySelector('[data-widget="W-greedy-loop"]');
      told(auto, r && ["W-autoregress.repeat", { start: r.start, from: r.start + 1, period: r.period,
        text: piece(d.steps.slice(r.start, r.start + r.period).map((x) => x.piece).join("")),
        link: greedy ? linkTo(greedy) : t("W-autoregress.section-3") }]);
    },
  });
  byId("auto-step").addEventListener("input", () => auto.redraw());

  // ---- W-naive-vs-cached: both loops run here, step by step: what each ran and how long it took
  let fresh = false;
  const naive = widget("W-naive-vs-cached", {
    runsOn: "W-naive-vs-cached.runs-on", follows: ["prompt", "model"], later: true,
    load: async () => {
      const [run, article] = await Promise.all([post("/api/loop-timing", { prompt: state.prompt, steps: STEPS },
        { fresh }), presetWork()]);
      return { ...run, article };
    },
    draw: (d) => drawLoops(naive, d),
  });
  byId("nvc-step").addEventListener("input", () => naive.redraw());
  q(naive.el, ".run").addEventListener("click", async () => {
    fresh = true;  // timings differ run to run: the button asks for a new run, not the remembered one
    try { await naive.run(); } finally { fresh = false; }
  });

  // ---- W-cost-toy: the running totals, naive beside cached (prefill counted), with the presets' states
  const toyInput = byId("cost-toy-n");
  const toy = widget("W-cost-toy", {
    runsOn: "W-cost-toy.runs-on",
    load: async () => ({ at: await get("/api/work", { prompt: 5, new: toyInput.value }), article: await presetWork() }),
    draw({ at, article }) {
      lines(q(toy.el, ".chart"), [at.series.map((r) => [r[0], r[1]]), at.series.map((r) => [r[0], r[2]])],
        { names: [t("loop.naive-total"), t("loop.cached-total")], x: t("loop.x"), y: t("loop.y"), markX: at.new });
      readout(toy, at);
      const [first, twelfth] = article;  // the presets' states, from the same computation as the chart
      told(toy, ["W-cost-toy.told", { p: first.prompt, w0: times(first.ratio_with_prefill), r0: times(first.ratio),
        n1: twelfth.new, w1: times(twelfth.ratio_with_prefill), r1: times(twelfth.ratio) }]);
    },
  });

  // ---- W-cost-gpt2: the ratio itself as the generation grows, both counts, with the preset's state
  const gptInput = byId("cost-gpt2-n");
  const gpt2 = widget("W-cost-gpt2", {
    runsOn: "W-cost-gpt2.runs-on",
    load: async () => ({ at: await get("/api/work", { prompt: 20, new: gptInput.value }), article: await presetWork() }),
    draw({ at, article }) {
      lines(q(gpt2.el, ".chart"), [at.series.map((r) => [r[0], r[1] / r[3]]), at.series.map((r) => [r[0], r[1] / r[2]])],
        { names: [t("W-cost-gpt2.after"), t("W-cost-gpt2.with")], x: t("loop.x"), y: t("W-cost-gpt2.y"), markX: at.new });
      readout(gpt2, at);
      const hundred = article[2];
      told(gpt2, ["W-cost-gpt2.told", { n0: hundred.new, a0: times(hundred.ratio), w0: times(hundred.ratio_with_prefill) }]);
    },
  });
  for (const [w, input] of [[toy, toyInput], [gpt2, gptInput]]) {
    presets(w.el);
    input.addEventListener("input", debounce(() => w.run(), 120));
    w.el.dataset.source = "formula";
  }
  for (const w of [auto, naive]) w.el.dataset.source = "model";  // what each widget runs on, drawn beside its line
}

/** the totals at the slider's length, and the ratio both ways */
function readout(w, at) {
  const last = at.series[at.series.length - 1];
  w.say(["loop.cost-readout", { n: at.new, naive: last[1], cached: last[2],
    ratio: ratios(at.ratio_with_prefill, at.ratio) }]);
}

// The step shown: the tokens each loop ran lit; every step's work, the two loops side by side on one axis; every
// step's time, the median of the runs with their range as a band, both loops on one axis; the readout from what ran,
// the prose from the whole run, saying of the time only what every run agrees on (explorer/timing.py).
function drawLoops(w, d) {
  const at = setRange(byId("nvc-step"), { max: d.steps.length }), s = d.steps[at - 1];
  const pieces = [...d.prompt_pieces, ...d.steps.map((x) => x.piece)].slice(0, s.naive_tokens);
  const lit = (from) => pieces.map((p, i) => chip(p, i >= from ? "ran" : "held"));
  q(w.el, ".lit-row.naive .chips").replaceChildren(...lit(0));
  q(w.el, ".lit-row.cached .chips").replaceChildren(...lit(pieces.length - s.cached_tokens));
  const steps = d.steps.map((x) => String(x.step + 1));
  const names = [t("W-naive-vs-cached.naive"), t("W-naive-vs-cached.cached")];
  columns(q(w.el, ".chart.work"), {
    groups: steps, mark: at - 1, x: t("loop.step-axis"), y: t("W-naive-vs-cached.work-axis", { layers: d.n_layers }),
    series: [{ name: names[0], values: d.steps.map((x) => x.naive_tokens), color: NAIVE },
      { name: names[1], values: d.steps.map((x) => x.cached_tokens), color: CACHED }],
    aria: t("W-naive-vs-cached.work-aria", { steps: d.steps.length, a: d.steps[0].naive_tokens,
      b: d.steps[d.steps.length - 1].naive_tokens, c: d.steps[d.steps.length - 1].cached_tokens }),
  });
  const inMs = (x) => 1000 * x;
  lines(q(w.el, ".chart.time"), [d.steps.map((x) => [x.step + 1, inMs(x.naive_s)]),
    d.steps.map((x) => [x.step + 1, inMs(x.cached_s)])],
  { names, x: t("loop.step-axis"), y: t("W-naive-vs-cached.time-axis", { runs: d.runs }), markX: at,
    bands: d.runs > 1 ? [d.steps.map((x) => [x.step + 1, inMs(x.naive_lo), inMs(x.naive_hi)]),
      d.steps.map((x) => [x.step + 1, inMs(x.cached_lo), inMs(x.cached_hi)])] : [] });
  const n = d.steps.length, wr = d.naive_work / d.cached_work, v = d.verdict, r = v.time_ratio;
  w.say([d.runs > 1 ? "W-naive-vs-cached.readout" : "W-naive-vs-cached.readout-one", { at, n: s.naive_tokens,
    nt: ms(s.naive_s), nlo: ms(s.naive_lo), nhi: ms(s.naive_hi), c: s.cached_tokens, ct: ms(s.cached_s),
    clo: ms(s.cached_lo), chi: ms(s.cached_hi), steps: n, runs: d.runs, nw: d.naive_work, NT: ms(d.naive_total_s),
    cw: d.cached_work, CT: ms(d.cached_total_s) }]);
  const counted = d.naive_work === d.cost_naive_work && d.cached_work === d.cost_cached_work;
  const [r0, r1, r2] = d.article.map((a) => times(a.ratio));
  const range = { runs: d.runs, w: times(wr), tr: times(r.median), lo: times(r.lo), hi: times(r.hi) };
  range.span = t(range.lo === range.hi ? "W-naive-vs-cached.span-same" : "W-naive-vs-cached.span", range);
  const intensity = document.querySelector('[data-widget="W-intensity"]');
  told(w,
    [d.same_tokens ? ["W-naive-vs-cached.work", { n, p: d.prompt_tokens, nw: d.naive_work, cw: d.cached_work,
      w: times(wr), a: times(d.naive_work / n), r0, r1, r2 }] : ["W-naive-vs-cached.differ", {}],
    !counted && ["W-naive-vs-cached.miscounted", { p: d.prompt_tokens, n, nw: d.naive_work, cw: d.cached_work,
      cnw: d.cost_naive_work, ccw: d.cost_cached_work }]],
    [[`W-naive-vs-cached.${timeVerdict(v)}`, range],
      v.fixed_share !== null && ["W-naive-vs-cached.fit", { points: 2 * n, r2: fmt.fixed(v.fit.r2, 2),
        a: ms(v.fit.per_step_s), b: fmt.fixed(1000 * v.fit.per_token_s, 2), share: fmt.pct(v.fixed_share), one: fmt.pct(v.fixed_share_one), n,
        link: intensity ? linkTo(intensity) : t("W-naive-vs-cached.intensity") }],
      [d.runs > 1 ? "W-naive-vs-cached.measured" : "W-naive-vs-cached.measured-one", { ...range,
        time: clock(d.measured_at) }]]);
}

/** the sentence the runs allow (explorer/timing.py verdict): too few runs or too noisy to tell, which loop was
 * faster in every run, and how the time gap stands against the work gap in every run */
function timeVerdict(v) {
  if (!v.enough) return "few";
  if (v.faster === null) return "noisy";
  if (v.faster === "naive") return "naive-faster";
  return v.gap ?? "cached-faster";
}
