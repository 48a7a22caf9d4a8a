// §08 Open the loop again: links back to every section, where each widget's numbers come from (the loaded model, a
// formula on a fixed shape, or a picture: read off the widgets themselves), and what to read next.

import { byId, el, q } from "../lib/dom.js";
import { lang, t } from "../lib/i18n.js";
import { linkTo, told } from "../lib/prose.js";
import { state } from "../lib/state.js";
import { frame, sectionFrame, widget, widgets } from "../lib/widget.js";
import strings from "./recap.strings.js";

export { strings };

export const html = sectionFrame("s08", [
  frame("W-reopen", `
  <ol class="recap"></ol>
  <button type="button" class="reopen" data-text="reopen-button"></button>`),
]);

/** where a widget's numbers come from: what it says of itself (data-source), else what it follows */
function sourceOf(w) {
  if (w.el.dataset.source) return w.el.dataset.source;
  if (w.follows.includes("model") || ["prompt", "own-prompt", "model"].includes(w.runsOn)) return "model";
  return w.runsOn === "runs-on.picture" ? "picture" : "formula";
}

export function mount() {
  let back = false;  // the button was pressed: the readout says where the reader is
  const reopen = widget("W-reopen", {
    runsOn: "W-reopen.runs-on", follows: ["model"],
    load: async () => state.info,
    draw(info) {
      const sections = [...document.querySelectorAll("main > section[id]")].filter((s) => s.id !== "s08");
      q(reopen.el, ".recap").replaceChildren(...sections.map((s) =>
        el("li", {}, el("a", { href: `#${s.id}`, textContent: t(`title-${s.id}`) }))));
      const groups = { model: [], formula: [], picture: [] };
      for (const w of widgets()) if (w !== reopen) (groups[sourceOf(w)] || groups.formula).push(w);
      const sep = lang() === "zh" ? "、" : ", ";
      const list = (ws) => ws.flatMap((w, i) => (i ? [sep, linkTo(w.el)] : [linkTo(w.el)]));
      const present = Object.entries(groups).filter(([, ws]) => ws.length);
      told(reopen, ...present.map(([source, ws]) => [`W-reopen.source.${source}`, { n: ws.length,
        model: info.display_name }]), ["W-reopen.measured", {}]);
      const box = q(reopen.el, ".prose.told"), paragraphs = box.querySelectorAll("p");
      present.forEach(([, ws], i) => paragraphs[i].append(...list(ws), lang() === "zh" ? "。" : "."));
      box.prepend(el("h4", { textContent: t("W-reopen.sources-title") }));
      if (back) return reopen.say(["W-reopen.back"]);
      const counted = present.reduce((n, [, ws]) => n + ws.length, 0);
      reopen.say(["W-reopen.readout", { sections: sections.length, widgets: counted, model: groups.model.length,
        formula: groups.formula.length, picture: groups.picture.length }]);
    },
  });
  q(reopen.el, ".reopen").addEventListener("click", () => {
    byId("s00").scrollIntoView();
    byId("prompt").focus();
    back = true;
    reopen.redraw();
  });
}
