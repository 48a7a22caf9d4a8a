// §04 The loop: each output becomes the next input; naive vs cached work, step by step and in total.

import { get, post } from "../lib/api.js";
import { bars, lines } from "../lib/charts.js";
import { byId, debounce, q, setRange, tokenSpan } from "../lib/dom.js";
import { piece, t } from "../lib/i18n.js";
import { state } from "../lib/state.js";
import { frame, sectionFrame, widget } from "../lib/widget.js";
import strings from "./loop.strings.js";

export { strings };

const STEPS = 12;  // greedy steps W-autoregress, W-naive-vs-cached and W-cache-fill show

export const html = sectionFrame("s04", [
  frame("W-autoregress", `
  <label for="auto-step" data-text="W-autoregress.step"></label>
  <input id="auto-step" type="range" min="1" max="${STEPS}" value="1">
  <p class="sequence"></p>`),
  frame("W-naive-vs-cached", `
  <fieldset><legend data-text="W-naive-vs-cached.legend"></legend>
    <label><input type="radio" name="naive" value="cached" checked> <span data-text="W-naive-vs-cached.cached"></span></label>
    <label><input type="radio" name="naive" value="naive"> <span data-text="W-naive-vs-cached.naive"></span></label>
  </fieldset>
  <div class="chart" role="img"></div>`),
  frame("W-cost-toy", `
  <label for="cost-toy-n" data-text="loop.generated"></label>
  <input id="cost-toy-n" type="range" min="1" max="40" value="12">
  <div class="chart" role="img"></div>`),
  frame("W-cost-gpt2", `
  <label for="cost-gpt2-n" data-text="loop.generated"></label>
  <input id="cost-gpt2-n" type="range" min="1" max="200" value="100">
  <div class="chart" role="img"></div>`),
]);

/** twelve greedy steps on the page's prompt: each step's token, position, cache and work (shared with §05) */
export const autoregress = () => post("/api/autoregress", { prompt: state.prompt, steps: STEPS });

export function mount() {
  const auto = widget("W-autoregress", {
    runsOn: "prompt", follows: ["prompt", "model"],
    load: autoregress,
    draw(d) {
      const at = setRange(byId("auto-step"), { max: d.steps.length });
      const spans = d.prompt.map((x) => Object.assign(tokenSpan(x.piece), { className: "token prompt" }));
      d.steps.slice(0, at).forEach((s, i) => spans.push(Object.assign(tokenSpan(s.piece),
        { className: `token ${i === at - 1 ? "deciding" : "generated"}` })));
      q(auto.el, ".sequence").replaceChildren(...spans);
      const s = d.steps[at - 1];
      auto.say(["W-autoregress.readout", { at, n: s.input_tokens, piece: piece(s.piece), position: s.position + 1,
        next: at + 1 }]);
    },
  });
  byId("auto-step").addEventListener("input", () => auto.redraw());

  const naive = widget("W-naive-vs-cached", {
    runsOn: "prompt", follows: ["prompt", "model"],
    load: autoregress,
    draw(d) {
      const mode = q(naive.el, "input[name=naive]:checked").value, key = `${mode}_work`;
      const word = t(`W-naive-vs-cached.${mode}`);
      bars(q(naive.el, ".chart"), d.steps.map((s) => ({ label: t("W-naive-vs-cached.bar", { s: s.step + 1 }), value: s[key],
        text: t("loop.tokens", { n: s[key] }), mark: mode === "naive" })),
      t("W-naive-vs-cached.chart", { mode: word, layers: d.n_layers }));
      const total = d.steps.reduce((a, s) => a + s[key], 0);
      naive.say(["W-naive-vs-cached.readout", { mode: word, work: t("loop.tokens", { n: total }), steps: d.steps.length }],
        [`W-naive-vs-cached.why.${mode}`]);
    },
  });
  naive.el.querySelectorAll("input[name=naive]").forEach((r) => r.addEventListener("change", () => naive.redraw()));

  for (const [name, prompt, slider] of [["W-cost-toy", 5, "cost-toy-n"], ["W-cost-gpt2", 20, "cost-gpt2-n"]]) {
    const w = widget(name, {
      runsOn: `${name}.runs-on`,
      load: () => get("/api/work", { prompt, new: byId(slider).value }),
      draw(d) {
        lines(q(w.el, ".chart"), [d.series.map((r) => [r[0], r[1]]), d.series.map((r) => [r[0], r[2]])],
          { names: [t("loop.naive-total"), t("loop.cached-total")], x: t("loop.x"), y: t("loop.y") });
        w.say([`${name}.readout`, { n: d.new, r: d.ratio.toFixed(1), rp: d.ratio_with_prefill.toFixed(1) }]);
      },
    });
    byId(slider).addEventListener("input", debounce(() => w.run(), 120));
  }
}
