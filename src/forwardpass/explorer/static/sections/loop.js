// §04 The loop: each output becomes the next input; the naive and the cached loop run here side by side, their work
// counted and their steps timed; then the article's token counts on its toy and on GPT-2 small.

import { get, post } from "../lib/api.js";
import { COLORS, lines } from "../lib/charts.js";
import { columns, gap, presets, told, times } from "../lib/compare.js";
import { byId, debounce, q, setRange, tokenSpan } from "../lib/dom.js";
import { fmt, piece, t } from "../lib/i18n.js";
import { state } from "../lib/state.js";
import { frame, sectionFrame, widget } from "../lib/widget.js";
import strings from "./loop.strings.js";

export { strings };

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
  <span class="presets"><button type="button" class="preset" data-value="1" data-text="W-cost-toy.preset-1"></button>
  <button type="button" class="preset" data-value="12" data-text="W-cost-toy.preset-12"></button></span>
  <div class="chart" role="img"></div>`),
  frame("W-cost-gpt2", `
  <span class="control"><label for="cost-gpt2-n" data-text="loop.generated"></label>
  <input id="cost-gpt2-n" type="range" min="1" max="200" value="100"></span>
  <span class="presets"><button type="button" class="preset" data-value="100" data-text="W-cost-gpt2.preset-100"></button></span>
  <div class="chart" role="img"></div>`),
  `<p class="prose bridge" data-text="bridge-s04"></p>`,
]);

/** twelve greedy steps on the page's prompt: each step's token, position, cache and work (shared with §05) */
export const autoregress = () => post("/api/autoregress", { prompt: state.prompt, steps: STEPS });

/** a token piece as a chip, its newlines and tabs made visible, and a piece of spaces alone shown as ␣ */
export function chip(s, className) {
  const shown = s.replace(/\n/g, "\\n").replace(/\t/g, "\\t");
  const span = tokenSpan(shown.trim() ? shown : shown.replace(/ /g, "␣"));
  span.className = `token ${className}`;
  return span;
}

const ms = (s) => fmt.fixed(1000 * s, 1);

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
    },
  });
  byId("auto-step").addEventListener("input", () => auto.redraw());

  // ---- W-naive-vs-cached: both loops run here, step by step: what each ran and how long it took
  let fresh = false;
  const naive = widget("W-naive-vs-cached", {
    runsOn: "W-naive-vs-cached.runs-on", follows: ["prompt", "model"],
    load: () => post("/api/loop-timing", { prompt: state.prompt, steps: STEPS }, { fresh }),
    draw: (d) => drawLoops(naive, d),
  });
  byId("nvc-step").addEventListener("input", () => naive.redraw());
  q(naive.el, ".run").addEventListener("click", async () => {
    fresh = true;  // timings differ run to run: the button asks for a new run, not the remembered one
    try { await naive.run(); } finally { fresh = false; }
  });

  // ---- W-cost-toy, W-cost-gpt2: the article's token counts, with its states one click away
  for (const [name, prompt, slider, states] of [["W-cost-toy", 5, "cost-toy-n", [1, 12]],
    ["W-cost-gpt2", 20, "cost-gpt2-n", [100]]]) {
    const input = byId(slider);
    const w = widget(name, {
      runsOn: `${name}.runs-on`,
      load: async () => {
        const [at, ...article] = await Promise.all([input.value, ...states].map((n) => get("/api/work", { prompt, new: n })));
        return { at, article };
      },
      draw({ at, article }) {
        lines(q(w.el, ".chart"), [at.series.map((r) => [r[0], r[1]]), at.series.map((r) => [r[0], r[2]])],
          { names: [t("loop.naive-total"), t("loop.cached-total")], x: t("loop.x"), y: t("loop.y"), markX: at.new });
        const last = at.series[at.series.length - 1];
        w.say(["loop.cost-readout", { n: at.new, naive: last[1], cached: last[2], r: times(at.ratio),
          rp: times(at.ratio_with_prefill) }]);
        const values = { p: at.prompt };  // the article's states, from the same computation as the chart
        article.forEach((a, i) => Object.assign(values, { [`r${i}`]: times(a.ratio), [`n${i}`]: a.new }));
        told(w, [`${name}.told`, values]);
      },
    });
    presets(w.el, input);
    input.addEventListener("input", debounce(() => w.run(), 120));
    w.el.dataset.source = "formula";
  }
  for (const w of [auto, naive]) w.el.dataset.source = "model";  // what each widget runs on, drawn beside its line
}

// The step shown: the tokens each loop ran lit; every step's work, the two loops side by side on one axis; every
// step's time, both loops on one axis; the readout from what ran.
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
  lines(q(w.el, ".chart.time"), [d.steps.map((x) => [x.step + 1, 1000 * x.naive_s]),
    d.steps.map((x) => [x.step + 1, 1000 * x.cached_s])],
  { names, x: t("loop.step-axis"), y: t("W-naive-vs-cached.time-axis"), markX: at });
  const wr = d.naive_work / d.cached_work, tr = d.naive_total_s / d.cached_total_s;
  w.say(["W-naive-vs-cached.step", { at, n: s.naive_tokens, nt: ms(s.naive_s), c: s.cached_tokens, ct: ms(s.cached_s) }],
    gap(), ["W-naive-vs-cached.total", { steps: d.steps.length, nw: d.naive_work, nt: ms(d.naive_total_s),
      cw: d.cached_work, ct: ms(d.cached_total_s), wr: times(wr), tr: times(tr) }],
    gap(), [d.same_tokens ? "W-naive-vs-cached.same" : "W-naive-vs-cached.differ", { steps: d.steps.length }]);
  const counted = d.naive_work === d.cost_naive_work && d.cached_work === d.cost_cached_work;
  told(w, [counted ? "W-naive-vs-cached.counted" : "W-naive-vs-cached.miscounted", { p: d.prompt_tokens,
    nw: d.naive_work, cw: d.cached_work, cnw: d.cost_naive_work, ccw: d.cost_cached_work, n: d.steps.length }],
  [tr < 0.8 * wr ? "W-naive-vs-cached.narrower" : tr > 1.25 * wr ? "W-naive-vs-cached.wider"
    : "W-naive-vs-cached.follows", { wr: times(wr), tr: times(tr) }],
  tr < 0.8 * wr && d.fit.per_step_s > 0 && d.fit.per_token_s > 0 && ["W-naive-vs-cached.fit", {
    points: 2 * d.steps.length, a: ms(d.fit.per_step_s), b: fmt.fixed(1000 * d.fit.per_token_s, 2) }]);
}
