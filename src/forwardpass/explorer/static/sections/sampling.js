// §03 What comes out: logits, temperature, top-k and top-p on the article's five-word toy beside the real model's
// vocabulary, and greedy decoding's loop.

import { post } from "../lib/api.js";
import { bars } from "../lib/charts.js";
import { byId, debounce, q, tokenSpan } from "../lib/dom.js";
import { fmt, nodes, piece, t } from "../lib/i18n.js";
import { state } from "../lib/state.js";
import { frame, sectionFrame, widget } from "../lib/widget.js";
import strings from "./sampling.strings.js";

export { strings };

const LOOP_WINDOW = 64;  // generated tokens the greedy-loop verdict is measured over
const pair = `<div class="pair"><div class="chart toy" role="img"></div><div class="chart real" role="img"></div></div>`;

export const html = sectionFrame("s03", [
  frame("W-logits", pair, { noControl: true }),
  frame("W-temperature", `
  <label for="temperature" data-text="W-temperature.label"></label>
  <input id="temperature" type="range" min="0" max="3" step="0.05" value="1">
  <button type="button" class="draw" data-text="W-temperature.draw"></button>
  ${pair}`),
  frame("W-top-k", `
  <label for="top-k">k</label>
  <input id="top-k" type="range" min="1" max="5" value="5">
  ${pair}`),
  frame("W-top-p", `
  <label for="top-p">p</label>
  <input id="top-p" type="range" min="0.05" max="1" step="0.05" value="1">
  ${pair}`),
  frame("W-greedy-loop", `
  <label for="loop-prompt" data-text="W-greedy-loop.prompt"></label>
  <input id="loop-prompt" type="text" value="I like to eat apples and bananas and">
  <label for="loop-at" data-text="W-greedy-loop.at"></label>
  <input id="loop-at" type="range" min="0" max="${LOOP_WINDOW - 1}" value="10">
  <button type="button" class="run" data-text="W-greedy-loop.run"></button>
  <div class="side"><pre class="greedy" data-text-aria="W-greedy-loop.aria.greedy"></pre><pre class="forced" data-text-aria="W-greedy-loop.aria.forced"></pre></div>`),
]);

/** the toy's candidates (the article's words, token pieces themselves) and the real model's top ten */
function samplingBars(w, d, logits) {
  const value = (x) => (logits ? x.logit : x.probability);
  bars(q(w.el, ".toy"), d.toy.map((x) => ({ label: x.piece, token: true, value: value(x),
    text: logits ? x.logit.toFixed(1) : fmt.pct(x.probability), dim: !x.kept })), t("sampling.toy"));
  bars(q(w.el, ".real"), d.real.map((x) => ({ label: JSON.stringify(x.piece), token: true, value: value(x),
    text: logits ? x.logit.toFixed(2) : fmt.pct(x.probability), dim: !x.kept })), t("sampling.real"));
}

const toyPiece = (s) => piece(s, false);

export function mount() {
  const follows = ["prompt", "model"], runsOn = "sampling.runs-on";

  const logits = widget("W-logits", {
    runsOn, follows,
    load: () => post("/api/sampling", { prompt: state.prompt }),
    draw(d) {
      samplingBars(logits, d, true);
      logits.say(["W-logits.readout", { toy: toyPiece(d.toy[0].piece), tl: d.toy[0].logit.toFixed(1),
        piece: piece(d.real[0].piece), rl: d.real[0].logit.toFixed(2), vocab: d.vocab_size }]);
    },
  });

  let drawn = null;  // the last token drawn at this temperature
  const temperature = widget("W-temperature", {
    runsOn, follows,
    load: () => post("/api/sampling", { prompt: state.prompt, temperature: +byId("temperature").value }),
    draw(d) {
      samplingBars(temperature, d, false);
      if (drawn) temperature.say(["W-temperature.drew", { piece: piece(drawn.piece), id: drawn.id, t: drawn.t.toFixed(2) }]);
      else temperature.say(["W-temperature.readout", { t: d.temperature.toFixed(2), toy: toyPiece(d.toy[0].piece),
        p: fmt.pct(d.toy[0].probability), piece: piece(d.real[0].piece), rp: fmt.pct(d.real[0].probability) }]);
    },
  });
  const rerun = debounce(() => temperature.run(), 120);
  byId("temperature").addEventListener("input", () => { drawn = null; rerun(); });
  q(temperature.el, ".draw").addEventListener("click", async () => {
    const t0 = +byId("temperature").value;
    try {
      const d = await post("/api/sample", { prompt: state.prompt, temperature: t0, seed: Math.floor(Math.random() * 1e9) },
        { fresh: true });
      drawn = { ...d, t: t0 };
      temperature.redraw();
    } catch (e) {
      temperature.fail(e);
    }
  });

  const topK = widget("W-top-k", {
    runsOn, follows,
    load: () => post("/api/sampling", { prompt: state.prompt, top_k: +byId("top-k").value }),
    draw(d) {
      samplingBars(topK, d, false);
      const kept = d.toy.filter((x) => x.kept);
      topK.say(["W-top-k.readout", { k: d.top_k, kept: fmt.list(kept.map((x) => toyPiece(x.piece))),
        toy: fmt.pct(1 - kept.reduce((s, x) => s + x.probability, 0)), real: fmt.pct(1 - d.real_kept_mass) }]);
    },
  });
  byId("top-k").addEventListener("input", debounce(() => topK.run(), 120));

  const topP = widget("W-top-p", {
    runsOn, follows,
    load: () => post("/api/sampling", { prompt: state.prompt, top_p: +byId("top-p").value }),
    draw(d) {
      samplingBars(topP, d, false);
      const kept = d.toy.filter((x) => x.kept);
      topP.say(["W-top-p.readout", { p: d.top_p.toFixed(2), n: kept.length, kept: fmt.list(kept.map((x) => toyPiece(x.piece))),
        rk: d.real_kept_count, vocab: d.vocab_size }]);
    },
  });
  byId("top-p").addEventListener("input", debounce(() => topP.run(), 120));

  // ---- W-greedy-loop: on its own prompt, on demand
  const greedy = widget("W-greedy-loop", {
    runsOn: "own-prompt", follows: ["model"], auto: false, idle: "not-run",
    load: () => post("/api/greedy-loop", { prompt: byId("loop-prompt").value, steps: LOOP_WINDOW,
      sample_at: +byId("loop-at").value, seed: 1 }),
    draw(d) {
      q(greedy.el, ".greedy").replaceChildren(...nodes("W-greedy-loop.greedy"), "\n", tokenSpan(d.greedy.text));
      q(greedy.el, ".forced").replaceChildren(...nodes("W-greedy-loop.forced", { at: d.forced.sample_at }), "\n",
        tokenSpan(d.forced.text));
      const loop = (l) => (l ? t("W-greedy-loop.loop", { period: l.period, start: l.start }) : t("W-greedy-loop.no-loop"));
      const verdict = d.forced.loop ? "again" : d.greedy.loop ? "broke" : "none";
      greedy.say(["W-greedy-loop.readout", { steps: d.steps, greedy: loop(d.greedy.loop), at: d.forced.sample_at,
        piece: piece(d.forced.sampled), forced: loop(d.forced.loop), verdict: t(`W-greedy-loop.${verdict}`) }]);
    },
  });
  q(greedy.el, ".run").addEventListener("click", () => greedy.run());
  for (const id of ["loop-prompt", "loop-at"]) byId(id).addEventListener("input", () => greedy.outdate("inputs"));
}
