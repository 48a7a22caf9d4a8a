// §07 The runnable loop: walked line by line (each line linked to the widgets that put a number on it, and where the
// loop stops said here), and what each line costs on the page's model, with the least time this machine can take.

import { get, post } from "../lib/api.js";
import { byId, debounce, el, q, row, stepper } from "../lib/dom.js";
import { code, fmt, lang, t } from "../lib/i18n.js";
import { bytes, linkTo, one, perSecond, seconds } from "../lib/prose.js";
import { state } from "../lib/state.js";
import { told } from "../lib/told.js";
import { frame, sectionFrame, widget } from "../lib/widget.js";
import { ratios } from "./loop.js";
import strings from "./runnable.strings.js";

export { strings };

export const html = sectionFrame("s07", [
  frame("W-loop-walk", `
  <button type="button" class="prev" data-text-aria="W-loop-walk.prev">◀</button>
  <button type="button" class="next" data-text-aria="W-loop-walk.next">▶</button>
  <ol class="code"></ol>`),
  frame("W-loop-cost", `
  <span class="control"><label for="lc-new" data-text="W-loop-cost.new"></label>
  <input id="lc-new" type="range" min="1" max="200" value="12"></span>
  <table class="costs stack"><caption data-text="W-loop-cost.caption"></caption>
    <thead><tr><th scope="col" data-text="W-loop-cost.col.line"></th><th scope="col" data-text="W-loop-cost.col.what"></th>
    <th scope="col" data-text="W-loop-cost.col.cost"></th><th scope="col" data-text="W-loop-cost.col.floor"></th></tr></thead>
    <tbody></tbody></table>`),
  `<p class="prose bridge" data-text="bridge-s07"></p>`,
]);

/** the link for one of a line's targets: a widget on the page, or "stop" (this section's own paragraph) */
function target(name) {
  const found = name === "stop" ? byId("stop-conditions") : document.querySelector(`[data-widget="${name}"]`);
  return found ? linkTo(found) : null;
}

export function mount() {
  const walkWidget = widget("W-loop-walk", {
    runsOn: "W-loop-walk.runs-on", follows: ["model"],
    load: async () => ({ loop: state.info.loop, cache: await get("/api/model-cache", {}, { model: true }) }),
    draw({ loop, cache }) {
      const at = walk.at();
      q(walkWidget.el, ".code").replaceChildren(...loop.map(([line], i) =>
        el("li", { className: i === at ? "current" : "" }, el("code", { textContent: line }))));
      // where the loop stops, said here (the last line's link comes to it): after the readout, under its own heading
      const many = document.querySelector('[data-widget="W-many-users"]');
      told(walkWidget, ["W-loop-walk.stop", { model: state.info.display_name, count: cache.end_tokens.length,
        tokens: fmt.list(cache.end_tokens.map((p) => code(p)), true), while: code("while"), max_len: code("max_len"),
        max_tokens: code("max_tokens"), link: many ? linkTo(many) : "" }]);
      const heading = el("h4", { id: "stop-conditions", textContent: t("W-loop-walk.stop-title") });
      heading.dataset.place = "W-loop-walk.stop-title";
      q(walkWidget.el, ".prose.told").prepend(heading);
      const [line, targets] = loop[at];
      const links = targets.map(target).filter(Boolean);
      walkWidget.say(["W-loop-walk.readout", { at: at + 1, lines: loop.length, line: code(line.trim()) }],
        ...links.flatMap((a, i) => (i ? [lang() === "zh" ? "；" : "; ", a] : [a])));
    },
  });
  walkWidget.el.dataset.source = "model";
  const walk = stepper(walkWidget.el, () => (walkWidget.data ? walkWidget.data.loop.length : 1), () => walkWidget.redraw());

  const cost = widget("W-loop-cost", {
    runsOn: "prompt", follows: ["prompt", "model"],
    async load() {
      const tokens = (await post("/api/lookup", { prompt: state.prompt })).tokens.length;
      return get("/api/loop-cost", { prompt: Math.max(1, tokens), new: byId("lc-new").value }, { model: true });
    },
    draw(d) {
      const heads = ["line", "what", "cost", "floor"].map((c) => t(`W-loop-cost.col.${c}`));
      const by = Object.fromEntries(d.rows.map((r) => [r.key, r]));
      q(cost.el, "tbody").replaceChildren(...d.rows.map((r) => {
        const amount = r.ratio !== undefined ? el("span", {}, ratios(r.ratio, r.ratio_after_prompt)) : r.bytes !== undefined ? bytes(r.bytes)
          : r.key === "all_decode" ? t("W-loop-cost.flops-calls", { n: fmt.int(r.flops), calls: fmt.int(r.calls) })
            : t("W-loop-cost.flops", { n: fmt.int(r.flops) });
        const floor = r.floor_s !== undefined ? t("W-loop-cost.floor", { time: seconds(r.floor_s), bound: t(`bound.${r.bound}`) })
          : t("W-loop-cost.none");
        return row([el("code", { textContent: r.line }), t(`W-loop-cost.what.${r.key}`, { dtype: r.dtype || "",
          pairs: r.pairs ?? "" }), amount, floor], heads);
      }));
      const call = by.first_decode;  // the first one-token call, where the loop makes one (not for one token)
      cost.say(["W-loop-cost.readout", { p: d.prompt, n: d.new, prefill: fmt.int(by.prefill.flops),
        each: call ? fmt.int(call.flops) : "" }]);
      const m = d.machine, w = d.weights, name = state.info.display_name;
      const format = w.storage === "stored" ? t("W-loop-cost.stored", { types: fmt.list(w.types, true) }) : code(w.storage);
      const intensity = document.querySelector('[data-widget="W-intensity"]');
      told(cost,
        [["W-loop-cost.told", { n: d.new, model: name, last: fmt.int((by.last_decode || call || by.prefill).flops),
          weights: bytes(w.bytes), bw: perSecond(m.bandwidth, "bytes"), read: seconds(w.bytes / m.bandwidth) }],
        ["W-loop-cost.told-bounds", { n: d.new, calls: d.new - 1, pbound: t(`bound.${by.prefill.bound}`),
          dbound: call ? t(`bound.${call.bound}`) : "", total: seconds((by.all_decode || call || by.prefill).floor_s) }]],
        [["W-loop-cost.told-assumed", { n: d.new, model: name, format, per: w.per_weight.toFixed(2),
          i: one((call || by.prefill).intensity), ridge: one(m.ridge), dtype: code(m.dtype),
          rate: perSecond(m.flops, "flops"), bw: perSecond(m.bandwidth, "bytes") }],
        d.fp16 && ["W-loop-cost.told-fp16", { i: one(d.fp16.intensity), bound: t(`bound.${d.fp16.bound}`),
          link: intensity ? linkTo(intensity) : t("W-loop-cost.intensity") }]]);
    },
  });
  cost.el.dataset.source = "model";
  cost.el.dataset.measured = "";
  byId("lc-new").addEventListener("input", debounce(() => cost.run(), 120));
}
