// §08 Open the loop again: links back to every section, and what to read next.

import { byId, el, q } from "../lib/dom.js";
import { t } from "../lib/i18n.js";
import { state } from "../lib/state.js";
import { frame, sectionFrame, widget } from "../lib/widget.js";
import strings from "./recap.strings.js";

export { strings };

export const html = sectionFrame("s08", [
  frame("W-reopen", `
  <ol class="recap"></ol>
  <button type="button" class="reopen" data-text="reopen-button"></button>`),
]);

export function mount() {
  let back = false;  // the button was pressed: the readout says where the reader is
  const reopen = widget("W-reopen", {
    runsOn: "W-reopen.runs-on", follows: ["model"],
    load: async () => state.info,
    draw(info) {
      const sections = [...document.querySelectorAll("main > section[id]")].filter((s) => s.id !== "s08");
      q(reopen.el, ".recap").replaceChildren(...sections.map((s) =>
        el("li", {}, el("a", { href: `#${s.id}`, textContent: t(`title-${s.id}`) }))));
      if (back) return reopen.say(["W-reopen.back"]);
      reopen.say(["W-reopen.readout", { sections: sections.length, widgets: document.querySelectorAll("[data-widget]").length,
        model: info.display_name }]);
    },
  });
  q(reopen.el, ".reopen").addEventListener("click", () => {
    byId("s00").scrollIntoView();
    byId("prompt").focus();
    back = true;
    reopen.redraw();
  });
}
