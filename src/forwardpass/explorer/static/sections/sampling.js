// §03 What comes out: logits and sampling. The article's five-word toy beside the real model (the same five words
// scored after "the cat sat on the", and its own top tokens), the logit lens (the next token read off the stream
// after every block), temperature, top-k and top-p with the article's settings one click away, and greedy decoding's
// loop with one sample tried at every step of its window. Every number the prose says comes from the same request
// the widget draws (the presets ask exactly what the prose read).

import { post } from "../lib/api.js";
import { COLORS, lines } from "../lib/charts.js";
import { byId, debounce, el, q, setRange, tokenSpan } from "../lib/dom.js";
import { fmt, lang, nodes, onLang, parts, piece, pieceLabel, readable, t } from "../lib/i18n.js";
import { on, state, TOY_SENTENCES } from "../lib/state.js";
import { stepStrip } from "../lib/stepstrip.js";
import { preset, presets, told } from "../lib/told.js";
import { tokenBars } from "../lib/tokenbars.js";
import { frame, sectionFrame, widget } from "../lib/widget.js";
import strings from "./sampling.strings.js";

export { strings };

const LOOP_WINDOW = 64;  // generated tokens the greedy-loop verdict is measured over
const SEARCHED = LOOP_WINDOW / 2;  // the steps a sample may go at: the window's first half (explorer/greedy.py)
const ARTICLE = { temperature: [0.1, 1], top_k: [1], top_p: [0.9] };  // the article's settings: presets and prose

const pair = `<div class="pair"><div class="chart toy" role="img" data-text-aria="s03.chart-empty"></div><div class="chart real" role="img" data-text-aria="s03.chart-empty"></div></div>`;
/** the article's settings of the slider `id` (its symbol `name`) as preset buttons */
const articlePresets = (id, name, values) => `<div class="presets" role="group" data-text-aria="s03.presets">
    <span data-text="s03.presets"></span>
    ${values.map((v) => preset({ [id]: v }, { text: `${name} = ${v}` })).join("\n")}
  </div>`;

export const html = sectionFrame("s03", [
  frame("W-logits", `
  <div class="pair"><div class="chart toy" role="img" data-text-aria="s03.chart-empty"></div><div class="chart five" role="img" data-text-aria="s03.chart-empty"></div></div>
  <div class="chart own" role="img" data-text-aria="s03.chart-empty"></div>`, { noControl: true }),
  frame("W-logit-lens", `
  <div class="s03-control"><label for="lens-k" data-text="W-logit-lens.k"></label>
  <input id="lens-k" type="range" min="1" max="10" value="5"></div>
  <div class="chart answer" role="img" data-text-aria="s03.chart-empty"></div>
  <table class="s03-lens"><caption></caption><thead></thead><tbody></tbody></table>`),
  frame("W-temperature", `
  <div class="s03-control"><label for="temperature" data-text="W-temperature.label"></label>
  <input id="temperature" type="range" min="0" max="3" step="0.05" value="1"></div>
  ${articlePresets("temperature", "T", ARTICLE.temperature)}
  <button type="button" class="draw" data-text="W-temperature.draw"></button>
  ${pair}`),
  frame("W-top-k", `
  <div class="s03-control"><label for="top-k">k</label>
  <input id="top-k" type="range" min="1" max="5" value="5"></div>
  ${articlePresets("top-k", "k", ARTICLE.top_k)}
  ${pair}`),
  frame("W-top-p", `
  <div class="s03-control"><label for="top-p">p</label>
  <input id="top-p" type="range" min="0.05" max="1" step="0.05" value="1"></div>
  ${articlePresets("top-p", "p", ARTICLE.top_p)}
  ${pair}`),
  frame("W-greedy-loop", `
  <label for="loop-prompt" data-text="W-greedy-loop.prompt"></label>
  <input id="loop-prompt" type="text" value="I like to eat apples and bananas and">
  <div class="s03-control"><label for="loop-at" data-text="W-greedy-loop.at"></label>
  <input id="loop-at" type="range" min="0" max="${SEARCHED - 1}" value="10"></div>
  <div class="s03-buttons">
    <button type="button" class="run" data-text="W-greedy-loop.run"></button>
    <button type="button" class="redraw" data-text="W-greedy-loop.redraw"></button>
    <span class="s03-seed"></span>
  </div>
  <div class="chart strip" role="img" data-text-aria="s03.chart-empty"></div>
  <div class="side"><pre class="greedy" data-text-aria="W-greedy-loop.aria.greedy"></pre><pre class="forced" data-text-aria="W-greedy-loop.aria.forced"></pre></div>`),
  `<p class="prose bridge" data-text="bridge-s03"></p>`,
]);

// ---- helpers -------------------------------------------------------------------------------------------------------

/** the article's toy candidates are words the page shows as they are (token pieces, never translated) */
// a word of the toy example: in Chinese text set off by quotation marks (Chinese puts no spaces between words)
const word = (s) => piece(lang() === "zh" ? `“${s}”` : s, false);
/** a model's token piece, shown readably: quoted text, raw bytes as ⟨E5 9D⟩, whitespace as ␣ ↵ ⇥ */
const tok = readable;
const label = (s) => [{ text: pieceLabel(s), tag: "tok" }];
/** a word the tokenizer spells in several pieces: " so" + "fa" */
const spelled = (pieces) => [{ text: pieces.map(pieceLabel).join(" + "), tag: "tok" }];

/** a probability as a percentage, with enough digits that "nearly all" never reads as 100.0% */
export function pct(p) {
  if (p >= 1) return "100%";
  if (p > 0.999) {
    for (let digits = 3; digits < 8; digits++) {
      const s = (100 * p).toFixed(digits);
      if (!s.startsWith("100")) return `${s}%`;
    }
  }
  if (p > 0 && p < 0.0005) return `<${fmt.pct(0.001)}`;  // never "0.0%" for a token that has some
  return fmt.pct(p);
}

const number = (n) => (n <= 10 ? t(`s03.number.${n}`) : fmt.int(n));

/** the probability kept tokens add up to: what renormalizing divides by (1 when nothing is cut) */
const keptMass = (xs) => xs.filter((x) => x.kept).reduce((s, x) => s + x.probability, 0);

/** a bar's number: its probability, and when a cut renormalized the rest, what it becomes (0 for a token cut) */
function renormalized(x, mass) {
  if (mass >= 1 - 1e-6) return pct(x.probability);
  return t("s03.renormalized", { p: pct(x.probability), q: x.kept ? pct(x.probability / mass) : "0" });
}

/** the toy's five and the real model's top ten, as probabilities before any cut (kept ones in colour), each with what
 * it becomes after the kept ones are renormalized */
function samplingBars(w, d) {
  const toyMass = keptMass(d.toy);
  tokenBars(q(w.el, ".toy"), d.toy.map((x) => ({ label: x.piece, token: true, value: x.probability,
    text: renormalized(x, toyMass), dim: !x.kept })), { title: t("sampling.toy"), axis: t("s03.axis.probability"),
    tick: (v) => `${fmt.tick(100 * v)}%` });
  tokenBars(q(w.el, ".real"), d.real.map((x) => ({ label: label(x.piece), token: true, value: x.probability,
    text: renormalized(x, d.real_kept_mass), dim: !x.kept })), { title: t("sampling.real"), axis: t("s03.axis.probability"),
    tick: (v) => `${fmt.tick(100 * v)}%` });
}

/** the view at the slider's value and at the article's settings, for the prompt at the top (one request each; a
 * preset asks again exactly what the prose read, and is answered from the same result) */
function views(param, value) {
  const ask = (v) => post("/api/sampling", { prompt: state.prompt, toy: state.toy, [param]: v });
  return Promise.all([ask(value), ...ARTICLE[param].map(ask)]).then(([now, ...article]) => ({ now, article }));
}


// ---- the widgets ---------------------------------------------------------------------------------------------------
// what makes a result drawn from the page's prompt out of date, and what W-temperature, W-top-k and W-top-p run on
const follows = ["prompt", "model", "toy"], runsOn = "sampling.runs-on";

export function mount() {
  tellStory();
  on("model", tellStory);
  on("toy", tellStory);
  mountLogits();
  mountLogitLens();
  mountTemperature();
  mountTopK();
  mountTopP();
  mountGreedyLoop();
}

/** the section's example sentence in its introduction: the toy's, in the page's example language (state.toy) */
function tellStory() {
  const intro = document.querySelector('[data-text="intro-s03"]'), values = { story: TOY_SENTENCES[state.toy] };
  intro.dataset.textValues = JSON.stringify(values);  // kept for a language change (i18n.apply)
  intro.replaceChildren(...nodes("intro-s03", values));
}

// W-logits: the toy's five scores, the same five on the real model after "the cat sat on the", its own top five
function mountLogits() {
  const logits = widget("W-logits", {
    runsOn: "W-logits.runs-on", follows: ["model", "toy"],
    load: () => post("/api/candidates", { toy: state.toy }),
    draw(d) {
      const toyOrder = [...d.words].sort((a, b) => b.toy_logit - a.toy_logit);
      const realOrder = [...d.words].sort((a, b) => b.word_probability - a.word_probability);
      const [toyLead, toySecond] = toyOrder, realLead = realOrder[0], top = d.top[0];
      tokenBars(q(logits.el, ".toy"), d.words.map((x) => ({ label: x.word, token: true, value: x.toy_logit,
        text: x.toy_logit.toFixed(1), mark: x === toyLead })), { title: t("W-logits.toy"), axis: t("s03.axis.logit") });
      tokenBars(q(logits.el, ".five"), d.words.map((x) => ({ label: spelled(x.pieces), token: true,
        value: x.logit, text: t("W-logits.rank", { logit: x.logit.toFixed(2), rank: x.rank }), mark: x === realLead })),
      { title: parts("W-logits.five", { story: piece(d.prompt, false) }), axis: t("s03.axis.logit") });
      const five = new Set(d.words.map((x) => x.ids[0]));
      tokenBars(q(logits.el, ".own"), d.top.map((x) => ({ label: label(x.piece), token: true, value: x.logit,
        text: t("W-logits.own-value", { logit: x.logit.toFixed(2), p: pct(x.probability) }), mark: five.has(x.id) })),
      { title: parts("W-logits.own", { story: piece(d.prompt, false), n: d.top.length }), axis: t("s03.axis.logit") });
      logits.say(["W-logits.readout", { toy: word(toyLead.word), tl: toyLead.toy_logit.toFixed(1),
        lead: word(realLead.word), rl: realLead.logit.toFixed(2), top: tok(top.piece), topl: top.logit.toFixed(2) }]);
      const sameOrder = realOrder.every((x, i) => x.word === toyOrder[i].word);
      const list = (xs) => fmt.list(xs.map((x) => word(x.word)));
      const split = d.words.filter((x) => x.pieces.length > 1);
      const topIsOne = five.has(top.id);
      // a top token that is only the start of a word (" cou"): the server says how the model goes on after it
      const starts = d.top.map((x, i) => [x, i]).filter(([x]) => x.goes_on && !five.has(x.id));
      told(logits,
        ["W-logits.told.toy", { toy: word(toyLead.word), logit: toyLead.toy_logit.toFixed(1),
          gap: (toyLead.toy_logit - toySecond.toy_logit).toFixed(1), second: word(toySecond.word) }],
        [realLead.word === toyLead.word ? "W-logits.told.agree" : "W-logits.told.disagree", {
          lead: word(realLead.word), toy: word(toyLead.word), logit: realLead.logit.toFixed(2),
          rank: realLead.rank, vocab: d.vocab_size, share: pct(realLead.word_probability / d.five_mass),
          toyShare: pct(toyLead.toy_probability) }],
        [sameOrder ? "W-logits.told.same-order" : "W-logits.told.order", { real: list(realOrder), toy: list(toyOrder) }],
        [topIsOne ? "W-logits.told.top-is-one" : "W-logits.told.top", { top: tok(top.piece), p: pct(top.probability),
          mass: pct(d.five_mass) }],
        ...split.map((x) => ["W-logits.told.split", { word: word(x.word), n: number(x.pieces.length),
          pieces: fmt.list(x.pieces.map(tok), true) }]),
        ...starts.map(([x, i]) => ["W-logits.told.piece", { rank: t(`W-logits.ordinal.${i + 1}`), piece: tok(x.piece),
          next: tok(x.goes_on[0].piece), p: pct(x.goes_on[0].probability), next2: tok(x.goes_on[1].piece),
          p2: pct(x.goes_on[1].probability) }]));
    },
  });
}

// W-logit-lens: the stream after every block, through the final norm and the unembedding
function mountLogitLens() {
  const lens = widget("W-logit-lens", {
    runsOn: "prompt", follows,
    load: () => post("/api/logit-lens", { prompt: state.prompt }),
    draw(d) { drawLens(lens, d, +byId("lens-k").value); },
  });
  byId("lens-k").addEventListener("input", () => lens.redraw());
}

// W-temperature
function mountTemperature() {
  let drawn = null;  // the last token drawn at this temperature
  const temperature = widget("W-temperature", {
    runsOn, follows,
    load: () => views("temperature", +byId("temperature").value),
    draw({ now: d, article: [cold, one] }) {
      samplingBars(temperature, d);
      if (drawn) temperature.say(["W-temperature.drew", { piece: tok(drawn.piece), id: drawn.id, t: drawn.t.toFixed(2) }]);
      else temperature.say(["W-temperature.readout", { t: d.temperature.toFixed(2), toy: word(d.toy[0].piece),
        p: pct(d.toy[0].probability), piece: tok(d.real[0].piece), rp: pct(d.real[0].probability) }]);
      told(temperature, ["W-temperature.told", { toy: word(one.toy[0].piece), p1: pct(one.toy[0].probability),
        t1: one.temperature, t01: cold.temperature, p01: pct(cold.toy[0].probability) }]);
    },
  });
  const rerun = debounce(() => temperature.run(), 120);
  byId("temperature").addEventListener("input", () => { drawn = null; rerun(); });
  presets(temperature.el, () => temperature.run());
  temperature.el.querySelectorAll(".preset").forEach((b) => b.addEventListener("click", () => { drawn = null; }));
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
}

// W-top-k
function mountTopK() {
  const topK = widget("W-top-k", {
    runsOn, follows,
    load: () => views("top_k", +byId("top-k").value),
    draw({ now: d, article: [one] }) {
      samplingBars(topK, d);
      const kept = d.toy.filter((x) => x.kept);
      topK.say(["W-top-k.readout", { k: d.top_k, kept: fmt.list(kept.map((x) => word(x.piece))),
        toy: pct(1 - kept.reduce((s, x) => s + x.probability, 0)), real: pct(1 - d.real_kept_mass) }]);
      const left = one.toy.filter((x) => x.kept);
      const leftMass = keptMass(one.toy);
      told(topK, ["W-top-k.told", { k: one.top_k, n: number(left.length), top: fmt.list(left.map((x) => word(x.piece))),
        cut: pct(1 - leftMass), real: pct(1 - one.real_kept_mass), p: pct(left[0].probability),
        q: pct(left[0].probability / leftMass) }]);
    },
  });
  byId("top-k").addEventListener("input", debounce(() => topK.run(), 120));
  presets(topK.el, () => topK.run());
}

// W-top-p
function mountTopP() {
  const topP = widget("W-top-p", {
    runsOn, follows,
    load: () => views("top_p", +byId("top-p").value),
    draw({ now: d, article: [nine] }) {
      samplingBars(topP, d);
      const kept = d.toy.filter((x) => x.kept);
      topP.say(["W-top-p.readout", { p: d.top_p.toFixed(2), n: kept.length, kept: fmt.list(kept.map((x) => word(x.piece))),
        rk: d.real_kept_count, vocab: d.vocab_size }]);
      const in9 = nine.toy.filter((x) => x.kept), mass9 = keptMass(nine.toy);
      told(topP, ["W-top-p.told", { p: nine.top_p, n: number(in9.length), kept: fmt.list(in9.map((x) => word(x.piece)), true),
        mass: pct(mass9), pp: `${fmt.tick(100 * nine.top_p)}%`, rk: nine.real_kept_count, vocab: nine.vocab_size,
        renorm: fmt.list(in9.map((x) => [word(x.piece), ` ${pct(x.probability / mass9)}`]), true) }]);
    },
  });
  byId("top-p").addEventListener("input", debounce(() => topP.run(), 120));
  presets(topP.el, () => topP.run());
}

// W-greedy-loop: on its own prompt, on demand; one run tries the sample at every step, the slider picks one
function mountGreedyLoop() {
  let seed = 1;
  const greedy = widget("W-greedy-loop", {
    runsOn: "own-prompt", follows: ["model"], auto: false, first: true, idle: "not-run",
    // the whole search in one request (the slider then only picks a row of it: nothing is asked again)
    load: () => post("/api/greedy-loop", { prompt: byId("loop-prompt").value, steps: LOOP_WINDOW, seed }),
    draw(d) { drawGreedy(greedy, d, +byId("loop-at").value); },
  });
  const pick = (step) => {
    setRange(byId("loop-at"), { value: step });
    if (greedy.data && greedy.el.dataset.state === "current") greedy.redraw();
  };
  q(greedy.el, ".run").addEventListener("click", () => greedy.run());
  q(greedy.el, ".redraw").addEventListener("click", () => {
    let next;
    do next = 1 + Math.floor(Math.random() * 99999); while (next === seed);
    seed = next;
    greedy.run();
  });
  byId("loop-at").addEventListener("input", () => pick(+byId("loop-at").value));
  byId("loop-prompt").addEventListener("input", () => greedy.outdate("inputs"));
  greedy.pick = pick;
  renderSeed(greedy, seed);  // before the first run too, and again when the language changes
  onLang(() => renderSeed(greedy, greedy.data ? greedy.data.seed : seed));
}

// ---- W-logit-lens --------------------------------------------------------------------------------------------------
const mix = (p) => {  // white mixed with the bar colour by p: an opaque background dark text stays readable on
  const [r, g, b] = [0, 114, 178], a = 0.5 * Math.sqrt(p);
  return `rgb(${[r, g, b].map((c) => Math.round(255 + (c - 255) * a)).join(",")})`;
};

function drawLens(w, d, k) {
  const answer = d.answer.id;
  lines(w.q(".answer"), [d.rows.map((r) => [r.block, r.answer_probability])], {
    names: [parts("W-logit-lens.series", { answer: tok(d.answer.piece) })],
    x: t("W-logit-lens.x"), y: t("W-logit-lens.y"), markX: d.first_top ?? undefined });
  const table = w.q(".s03-lens");
  const head = [t("W-logit-lens.col.block"), ...Array.from({ length: k }, (_, i) => t("W-logit-lens.col.rank", { n: i + 1 }))];
  table.querySelector("caption").replaceChildren(...nodes("W-logit-lens.caption", { tail: piece(d.tail, false), k }));
  table.querySelector("thead").replaceChildren(el("tr", {}, head.map((h) => el("th", { scope: "col", textContent: h }))));
  const rowOf = (r, name, mine) => {
    const tr = el("tr", { className: mine ? "model" : r.block === d.n_layers ? "last" : "" });
    tr.append(el("th", { scope: "row", textContent: name }));
    r.top.slice(0, k).forEach((x, i) => {
      const td = el("td", {}, tokenSpan(pieceLabel(x.piece)), el("span", { className: "p", textContent: pct(x.probability) }));
      td.style.background = mix(x.probability);
      td.dataset.label = head[i + 1];
      if (x.id === answer) td.classList.add("answer");
      tr.append(td);
    });
    return tr;
  };
  table.querySelector("tbody").replaceChildren(
    ...d.rows.map((r) => rowOf(r, r.block === d.n_layers ? t("W-logit-lens.last", { n: r.block }) : fmt.int(r.block))),
    rowOf(d.model, t("W-logit-lens.model"), true));
  const last = d.rows[d.rows.length - 1].top[0];
  w.say(["W-logit-lens.readout", { k, n: d.n_layers, top: tok(last.piece), p: pct(last.probability),
    same: t(d.last_row_is_the_models ? "W-logit-lens.same" : "W-logit-lens.differs") }]);
  const onlyLast = d.first_top === d.n_layers;  // "from block 30 on" says nothing when block 30 is the last
  told(w, [onlyLast ? "W-logit-lens.told.only-last" : "W-logit-lens.told", { tail: piece(d.tail, false),
    answer: tok(d.answer.piece), first: d.first_top, n: d.n_layers }],
  d.settled === d.first_top ? null : d.settled === d.n_layers ? ["W-logit-lens.told.settled-last", {}]
    : ["W-logit-lens.told.settled", { settled: d.settled }],
  [d.last_row_is_the_models ? "W-logit-lens.told.same" : "W-logit-lens.told.differs", {}]);
}

// ---- W-greedy-loop -------------------------------------------------------------------------------------------------
function renderSeed(w, seed) {
  w.q(".s03-seed").replaceChildren(...nodes("W-greedy-loop.seed", { seed: String(seed) }));
}

const KINDS = {
  same: { fill: "#eef0f3", stroke: COLORS.dim, glyph: "=" },
  again: { fill: "#fbe3d3", stroke: COLORS.mark, glyph: "↻" },
  broke: { fill: "#d6e9f6", stroke: COLORS.bar, glyph: "✓" },
  changed: { fill: "#ffffff", stroke: COLORS.bar, glyph: "≠" },
  appeared: { fill: "#fbe3d3", stroke: COLORS.mark, glyph: "↻" },
};
// the outcomes a step can have (explorer/greedy.py outcome): against a greedy loop, or where greedy did not loop
const OUTCOMES = { looped: ["same", "again", "broke"], free: ["same", "changed", "appeared"] };

function drawGreedy(w, d, at) {
  const row = d.rows[Math.min(at, d.rows.length - 1)];
  renderSeed(w, d.seed);
  const kinds = Object.fromEntries(OUTCOMES[d.greedy.loop ? "looped" : "free"].map((k) => [k,
    { ...KINDS[k], name: t(`W-greedy-loop.kind.${k}`) }]));
  stepStrip(w.q(".strip"), d.rows.map((r) => r.outcome), kinds, { chosen: row.step, onPick: (s) => w.pick(s),
    axis: t("W-greedy-loop.strip-axis", { n: d.searched }),
    summary: t("W-greedy-loop.strip-summary", { n: d.searched, differ: d.differ, k: d.broke.length, seed: String(d.seed) }) });
  w.q(".greedy").replaceChildren(...nodes("W-greedy-loop.greedy"), "\n", tokenSpan(d.greedy.text));
  const forced = w.q(".forced");
  forced.replaceChildren(...nodes("W-greedy-loop.forced", { at: row.step }), "\n", tokenSpan(row.head),
    el("mark", {}, tokenSpan(row.sampled_piece)), tokenSpan(row.text.slice((row.head + row.sampled_piece).length)));
  if (!row.text.startsWith(row.head + row.sampled_piece)) forced.replaceChildren(...nodes("W-greedy-loop.forced",
    { at: row.step }), "\n", tokenSpan(row.text));  // a piece that is only part of a character: the text as decoded
  const loop = (l) => (l ? t("W-greedy-loop.loop", { period: l.period, start: l.start }) : t("W-greedy-loop.no-loop"));
  const values = { piece: tok(row.sampled_piece), greedyPiece: tok(row.greedy_piece),
    p: pct(row.probability), gp: pct(row.greedy_probability), period: row.loop?.period, start: row.loop?.start };
  const verdict = !d.greedy.loop ? "no-greedy-loop" : row.same_token ? "same-token" : row.same_text ? "same-text"
    : row.broke ? "broke" : row.same_loop ? "same-loop" : "other-loop";
  const breaks = d.broke.length;
  w.say(["W-greedy-loop.readout", { steps: d.generated, greedy: loop(d.greedy.loop), at: row.step, seed: String(d.seed),
    forced: loop(row.loop), verdict: nodes(`W-greedy-loop.verdict.${verdict}`, values) }], lang() === "zh" ? "" : " ",
  [d.greedy.loop ? "W-greedy-loop.search" : "W-greedy-loop.search-no-loop", { n: d.searched, differ: d.differ, k: breaks,
    steps: fmt.list(d.broke.map((s) => fmt.int(s)), true), here: t(row.broke ? "W-greedy-loop.here-yes" : "W-greedy-loop.here-no",
      { at: row.step }) }]);
  if (d.greedy.loop) {
    told(w, ["W-greedy-loop.told", { start: d.greedy.loop.start, period: d.greedy.loop.period, steps: d.generated }],
      ["W-greedy-loop.told.name", {}],
      ["W-greedy-loop.told.search", { seed: String(d.seed), k: number(breaks), count: breaks, n: d.searched }]);
  } else {
    told(w, ["W-greedy-loop.told.no-loop", { steps: d.generated }], ["W-greedy-loop.told.name", {}]);
  }
}
