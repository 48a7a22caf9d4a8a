// §08 Open the loop again: the handful of ideas the page taught, each with the number the page computed for it (asked
// of the same endpoints, with the same requests, as the widgets that show it: the page's answer cache gives one
// computation to both), each linked to its section; then where each widget's numbers come from (the loaded model, a
// formula on a fixed shape, or a picture: read off the widgets themselves), compact, and what to read next.

import { get, post } from "../lib/api.js";
import { byId, el, q } from "../lib/dom.js";
import { fmt, nodes, piece, t } from "../lib/i18n.js";
import { bytes, linkTo, seconds } from "../lib/prose.js";
import { state } from "../lib/state.js";
import { told } from "../lib/told.js";
import { frame, sectionFrame, widget, widgets } from "../lib/widget.js";
import { autoregress, ratios } from "./loop.js";
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

// the sections with an idea each, in the page's order (the count in the title and the introduction is this list's)
const IDEAS = ["s00", "s01", "s03", "s04", "s05", "s06", "drafting", "s07"];

/** the numbers of the page's ideas, from the requests the widgets that show them make (answered once for both) */
async function ideas() {
  const drafted = +byId("dr-new").defaultValue;  // W-drafting's opening run: the page's prompt, that many tokens
  const [lookup, split, sampling, loop, kv, intensity, concurrency, model, drafting] = await Promise.all([
    post("/api/lookup", { prompt: state.prompt }),                  // W-lookup
    get("/api/split", { d: 768 }),                                   // W-split at GPT-2 small's width
    post("/api/sampling", { prompt: state.prompt, toy: state.toy, temperature: 1 }), // W-temperature at T = 1
    autoregress(),                                                   // W-autoregress, W-cache-fill
    get("/api/kv-here", {}, { model: true }),                        // W-cache-here
    get("/api/intensity", { prompt: 16 }),                           // W-intensity at P = 16
    get("/api/concurrency", { sequences: 1 }),                       // W-concurrency
    get("/api/model-cache", {}, { model: true }),                    // W-concurrency's table, W-loop-walk
    post("/api/drafting", { prompt: state.prompt, steps: drafted }), // W-drafting on the page's prompt
  ]);
  return { info: state.info, lookup, split, sampling, loop, kv, intensity, concurrency, model, drafting };
}

function idea(section, key, values) {
  const heading = document.getElementById(section);
  const a = el("a", { href: `#${section}`, textContent: heading ? heading.querySelector("h2").textContent : section });
  return el("li", {}, el("p", { className: "idea" }, a, el("br"), ...nodes(key, values)));
}

export function mount() {
  const count = JSON.stringify({ n: IDEAS.length });
  document.querySelectorAll('[data-text="title-W-reopen"], [data-text="before-W-reopen"]')
    .forEach((e) => { e.dataset.textValues = count; });
  let back = false;  // the button was pressed: the readout says where the reader is
  const reopen = widget("W-reopen", {
    runsOn: "W-reopen.runs-on", follows: ["prompt", "model", "toy"],
    load: ideas,
    draw(d) {
      const name = d.info.display_name, steps = d.loop.steps;
      const mat = d.sampling.toy.find((c) => c.piece === "mat") || d.sampling.toy[0], top = d.sampling.real[0];
      const naive = steps.reduce((n, s) => n + s.naive_work, 0), cached = steps.reduce((n, s) => n + s.cached_work, 0);
      const here = d.intensity.machines[0];
      q(reopen.el, ".recap").replaceChildren(
        idea("s00", "W-reopen.idea.s00", { model: name, n: d.lookup.tokens.length, d: fmt.int(d.lookup.d_model),
          vocab: fmt.int(d.lookup.vocab_size) }),
        idea("s01", "W-reopen.idea.s01", { gpt2: fmt.pct(d.split.ffn_share), model: name,
          here: fmt.pct(d.info.parameters.ffn / (d.info.parameters.ffn + d.info.parameters.attention)) }),
        idea("s03", "W-reopen.idea.s03", { vocab: fmt.int(d.sampling.vocab_size), word: piece(mat.piece), mat: fmt.pct(mat.probability),
          piece: piece(top.piece), p: fmt.pct(top.probability) }),
        idea("s04", "W-reopen.idea.s04", { steps: steps.length, cached, naive,
          ratio: ratios(naive / cached, naive / steps.length) }),
        idea("s05", "W-reopen.idea.s05", { model: name, per: bytes(d.kv.model.per_token),
          gpt3: fmt.gib(d.kv.gpt3.full_context_gib), ctx: fmt.int(d.kv.gpt3.context) }),
        idea("s06", "W-reopen.idea.s06", { v: fmt.fixed(d.intensity.decode, 1), n: d.concurrency.crossover - 1,
          all: d.intensity.machines.every((m) => m.decode_bound === "memory") }),
        idea("drafting", d.drafting.drafting ? "W-reopen.idea.drafting" : "W-reopen.idea.drafting.none",
          { model: name, n: d.drafting.tokens.length, passes: d.drafting.passes, plain: d.drafting.plain.passes,
            same: d.drafting.same }),
        idea("s07", "W-reopen.idea.s07", { lines: d.info.loop.length, model: name, weights: bytes(d.model.weights),
          read: seconds(d.model.weights / here.bandwidth) }));
      // where the numbers came from: the widgets grouped by source, their links compact
      const groups = { model: [], formula: [], picture: [] };
      const inOrder = widgets().filter((w) => w !== reopen)  // as the page shows them (W-mechanism sits inside §2)
        .sort((a, b) => (a.el.compareDocumentPosition(b.el) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1));
      for (const w of inOrder) (groups[sourceOf(w)] || groups.formula).push(w);
      const list = (ws) => ws.flatMap((w, i) => (i ? [" · ", linkTo(w.el)] : [linkTo(w.el)]));
      const present = Object.entries(groups).filter(([, ws]) => ws.length);
      told(reopen, ...present.map(([source, ws]) => [`W-reopen.source.${source}`, { n: ws.length, model: name }]),
        ["W-reopen.measured", {}]);
      const box = q(reopen.el, ".prose.told"), paragraphs = box.querySelectorAll("p");
      present.forEach(([, ws], i) => paragraphs[i].append(...list(ws)));
      box.prepend(el("h4", { textContent: t("W-reopen.sources-title") }));
      if (back) return reopen.say(["W-reopen.back"]);
      const sections = document.querySelectorAll("main > section[id]").length;
      reopen.say(["W-reopen.readout", { sections, widgets: present.reduce((n, [, ws]) => n + ws.length, 0) + 1,
        model: groups.model.length, formula: groups.formula.length, picture: groups.picture.length }]);
    },
  });
  q(reopen.el, ".reopen").addEventListener("click", () => {
    document.querySelector("header").scrollIntoView();
    byId("prompt").focus({ preventScroll: true });
    byId("prompt").select();
    back = true;
    reopen.redraw();
  });
}
