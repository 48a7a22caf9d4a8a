// §07 The runnable loop: walked line by line, and what each line costs on the page's model.

import { get, post } from "../lib/api.js";
import { byId, debounce, el, q, row, stepper } from "../lib/dom.js";
import { code, fmt, t } from "../lib/i18n.js";
import { state } from "../lib/state.js";
import { frame, sectionFrame, widget } from "../lib/widget.js";
import strings from "./runnable.strings.js";

export { strings };

export const html = sectionFrame("s07", [
  frame("W-loop-walk", `
  <button type="button" class="prev" data-text-aria="W-loop-walk.prev">◀</button>
  <button type="button" class="next" data-text-aria="W-loop-walk.next">▶</button>
  <ol class="code"></ol>`),
  frame("W-loop-cost", `
  <label for="lc-new" data-text="W-loop-cost.new"></label>
  <input id="lc-new" type="range" min="1" max="200" value="12">
  <table class="costs stack"><caption data-text="W-loop-cost.caption"></caption>
    <thead><tr><th scope="col" data-text="W-loop-cost.col.line"></th><th scope="col" data-text="W-loop-cost.col.what"></th>
    <th scope="col" data-text="W-loop-cost.col.cost"></th></tr></thead><tbody></tbody></table>`),
]);

export function mount() {
  const walkWidget = widget("W-loop-walk", {
    runsOn: "model", follows: ["model"],
    load: async () => state.info.loop,
    draw(loop) {
      const at = walk.at();
      q(walkWidget.el, ".code").replaceChildren(...loop.map(([line], i) =>
        el("li", { className: i === at ? "current" : "" }, el("code", { textContent: line }))));
      const [line, where] = loop[at];
      const link = el("a", { href: `#s${where.slice(1, 3)}`, textContent: t(`W-loop-walk.where.${at}`) });
      walkWidget.say(["W-loop-walk.readout", { line: code(line.trim()) }], link);
    },
  });
  const walk = stepper(walkWidget.el, () => (walkWidget.data ? walkWidget.data.length : 1), () => walkWidget.redraw());

  const cost = widget("W-loop-cost", {
    runsOn: "prompt", follows: ["prompt", "model"],
    async load() {
      const tokens = (await post("/api/lookup", { prompt: state.prompt })).tokens.length;
      return get("/api/loop-cost", { prompt: Math.max(1, tokens), new: byId("lc-new").value }, { model: true });
    },
    draw(d) {
      const heads = ["line", "what", "cost"].map((c) => t(`W-loop-cost.col.${c}`));
      q(cost.el, "tbody").replaceChildren(...d.rows.map((r) => {
        const amount = r.flops !== undefined ? t("W-loop-cost.flops", { n: fmt.int(r.flops) })
          : r.bytes !== undefined ? t("W-loop-cost.bytes", { n: fmt.int(r.bytes) }) : `${r.ratio.toFixed(1)}×`;
        return row([el("code", { textContent: r.line }), t(`W-loop-cost.what.${r.key}`), amount], heads);
      }));
      cost.say(["W-loop-cost.readout", { p: d.prompt, n: d.new, prefill: fmt.int(d.rows[0].flops), each: fmt.int(d.rows[1].flops) }]);
    },
  });
  byId("lc-new").addEventListener("input", debounce(() => cost.run(), 120));
}
