// §06 What it costs: work per byte of weights, one request's cache beside the weights, many requests, and where
// GPT-2 small's parameters live.

import { get } from "../lib/api.js";
import { bars } from "../lib/charts.js";
import { byId, debounce, q } from "../lib/dom.js";
import { fmt, t } from "../lib/i18n.js";
import { frame, sectionFrame, widget } from "../lib/widget.js";
import strings from "./cost.strings.js";

export { strings };

export const html = sectionFrame("s06", [
  frame("W-intensity", `
  <label for="intensity-p" data-text="W-intensity.p"></label>
  <input id="intensity-p" type="range" min="1" max="256" value="16">
  <div class="chart" role="img"></div>`),
  frame("W-weights-vs-cache", `
  <label for="wvc-context" data-text="W-weights-vs-cache.context"></label>
  <input id="wvc-context" type="range" min="64" max="2048" step="64" value="2048">
  <div class="chart" role="img"></div>`),
  frame("W-concurrency", `
  <label for="sequences" data-text="W-concurrency.label"></label>
  <input id="sequences" type="range" min="1" max="100" value="1">
  <div class="chart" role="img"></div>`),
  frame("W-param-split", `
  <div class="chart" role="img"></div>`, { noControl: true }),
]);

export function mount() {
  const intensity = widget("W-intensity", {
    runsOn: "runs-on.gpt3",
    load: () => get("/api/intensity", { prompt: byId("intensity-p").value }),
    draw(d) {
      const value = (v) => t("W-intensity.value", { v: v.toFixed(1) });
      bars(q(intensity.el, ".chart"), [
        { label: t("W-intensity.prefill", { p: d.prompt }), value: d.prefill, text: value(d.prefill) },
        { label: t("W-intensity.decode"), value: d.decode, text: value(d.decode), mark: true }], t("W-intensity.chart"));
      intensity.say(["W-intensity.readout", { p: d.prompt, prefill: d.prefill.toFixed(1), decode: d.decode.toFixed(1) }]);
    },
  });
  byId("intensity-p").addEventListener("input", debounce(() => intensity.run(), 120));

  const wvc = widget("W-weights-vs-cache", {
    runsOn: "runs-on.gpt3",
    load: () => get("/api/concurrency", { sequences: 1, context: byId("wvc-context").value }),
    draw(d) {
      bars(q(wvc.el, ".chart"), [
        { label: t("W-weights-vs-cache.weights"), value: d.weights_gib, text: fmt.gib(d.weights_gib) },
        { label: t("W-weights-vs-cache.cache", { n: d.context }), value: d.one_cache_gib, text: fmt.gib(d.one_cache_gib),
          mark: true }], t("W-weights-vs-cache.chart"));
      wvc.say(["W-weights-vs-cache.readout", { n: d.context, cache: fmt.gib(d.one_cache_gib), weights: fmt.gib(d.weights_gib) }]);
    },
  });
  byId("wvc-context").addEventListener("input", debounce(() => wvc.run(), 120));

  const concurrency = widget("W-concurrency", {
    runsOn: "runs-on.gpt3",
    load: () => get("/api/concurrency", { sequences: byId("sequences").value }),
    draw(d) {
      bars(q(concurrency.el, ".chart"), [
        { label: t("W-concurrency.weights"), value: d.weights_gib, text: fmt.gib(d.weights_gib) },
        { label: t("W-concurrency.caches", { n: d.sequences }), value: d.caches_gib, text: fmt.gib(d.caches_gib),
          mark: d.caches_outweigh }], t("W-concurrency.chart"));
      const verdict = d.caches_outweigh ? t("W-concurrency.outweigh") : t("W-concurrency.heavier", { x: d.crossover });
      concurrency.say(["W-concurrency.readout", { n: d.sequences, caches: fmt.gib(d.caches_gib),
        weights: fmt.gib(d.weights_gib), verdict }]);
    },
  });
  byId("sequences").addEventListener("input", debounce(() => concurrency.run(), 120));

  const split = widget("W-param-split", {
    runsOn: "runs-on.gpt2",
    load: () => get("/api/param-split"),
    draw(d) {
      const rest = d.total - d.blocks;
      bars(q(split.el, ".chart"), [
        { label: t("W-param-split.ffn"), value: d.ffn, text: fmt.params(d.ffn) },
        { label: t("W-param-split.attention"), value: d.attention, text: fmt.params(d.attention) },
        { label: t("W-param-split.embeddings"), value: rest, text: fmt.params(rest), mark: true }], t("W-param-split.chart"));
      split.say(["W-param-split.readout", { share: fmt.pct(d.blocks_share), total: fmt.int(d.total) }]);
    },
  });
}
