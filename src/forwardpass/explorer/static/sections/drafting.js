// §07 Beyond the loop: the engine's speculative decoding on the reader's text. The text drawn pass by pass (each pass
// one read of the weights, its tokens boxed together: drafted and kept, or the model's own), one pass opened (its
// draft, where in the text it was copied from, what was kept and the first token refused), the reads of the weights
// with drafting and without, and whether the two runs wrote the same tokens: all from one request to /api/drafting.

import { post } from "../lib/api.js";
import { bars } from "../lib/charts.js";
import { byId, debounce, el, q, row, setRange, tokenSpan } from "../lib/dom.js";
import { code, fmt, hasBytes, isBlank, nodes, onLang, pieceLabel, readable, t } from "../lib/i18n.js";
import { state } from "../lib/state.js";
import { told } from "../lib/told.js";
import { frame, sectionFrame, widget } from "../lib/widget.js";
import strings from "./drafting.strings.js";

export { strings };

const NEW_TOKENS = 48;  // the opening run (explorer/app.py: opening() prepares the same)

export const html = sectionFrame("drafting", [
  frame("W-drafting", `
  <fieldset class="dr-source"><legend data-text="W-drafting.source"></legend>
  <label><input type="radio" name="dr-source" value="prompt" checked> <span data-text="W-drafting.source.prompt"></span></label>
  <label><input type="radio" name="dr-source" value="list"> <span data-text="W-drafting.source.list"></span></label>
  </fieldset>
  <span class="control"><label for="dr-new" data-text="W-drafting.new"></label>
  <input id="dr-new" type="range" min="8" max="96" step="8" value="${NEW_TOKENS}"></span>
  <div class="dr-stream" role="group" data-text-aria="W-drafting.stream"></div>
  <ul class="dr-legend">
    <li><span class="swatch prompt"></span> <span data-text="W-drafting.legend.prompt"></span></li>
    <li><span class="swatch kept"></span> <span data-text="W-drafting.legend.kept"></span></li>
    <li><span class="swatch own"></span> <span data-text="W-drafting.legend.own"></span></li>
    <li><span class="swatch copied"></span> <span data-text="W-drafting.legend.copied"></span></li>
    <li><span class="swatch matched"></span> <span data-text="W-drafting.legend.matched"></span></li>
  </ul>
  <span class="control"><label for="dr-step" data-text="W-drafting.pass"></label>
  <input id="dr-step" type="range" min="1" max="1" value="1"></span>
  <div class="dr-detail"></div>
  <div class="chart" role="img"></div>
  <details class="dr-each"><summary data-text="W-drafting.each"></summary>
  <table class="costs stack"><thead><tr></tr></thead><tbody></tbody></table></details>`),
  `<p class="prose bridge" data-text="bridge-drafting"></p>`,
]);

/** a token piece as text in a chip: bytes as ⟨E7⟩, a line break as ↵, a piece of blanks as ␣ (lib/i18n.js) */
const shown = (p) => (isBlank(p) || hasBytes(p) ? pieceLabel(p).replace(/^"|"$/g, "") : p.replace(/\n/g, "↵"));

function chip(p, ...classes) {
  const span = tokenSpan(shown(p));
  span.classList.add(...classes.filter(Boolean));
  return span;
}

export function mount() {
  const root = document.querySelector('[data-widget="W-drafting"]');
  const stepInput = byId("dr-step");
  const source = () => root.querySelector('input[name="dr-source"]:checked').value;
  const text = () => (source() === "list" ? t("W-drafting.list-text") : state.prompt);
  let shownData = null;

  const w = widget("W-drafting", {
    runsOn: "W-drafting.runs-on.prompt", follows: ["prompt", "model"], later: true,
    load: () => post("/api/drafting", { prompt: text(), steps: +byId("dr-new").value }),
    draw(d) {
      if (d !== shownData) {  // a new run opens on the pass that gave the most tokens
        shownData = d;
        const best = d.steps.reduce((b, s, i) => (s.tokens.length > d.steps[b].tokens.length ? i : b), 0);
        setRange(stepInput, { min: 1, max: d.steps.length, value: best + 1 });
      }
      drawPass(w, d, +stepInput.value - 1);
      tell(w, d, source());
    },
  });
  w.el.dataset.source = "model";
  const rerun = () => {
    w.runsOn = `W-drafting.runs-on.${source()}`;
    w.run();
  };
  root.querySelectorAll('input[name="dr-source"]').forEach((r) => r.addEventListener("change", rerun));
  byId("dr-new").addEventListener("input", debounce(rerun, 120));
  stepInput.addEventListener("input", () => { if (w.data) drawPass(w, w.data, +stepInput.value - 1); });
  onLang(() => { if (source() === "list") w.run(); });  // the list is in the page's language
}

/** the text pass by pass with pass k opened: its box framed, its draft's source marked, and its detail below */
function drawPass(w, d, k) {
  const s = d.steps[k], from = s.from, end = from ? Math.min(from.at + s.draft.length, s.start) : 0;
  const inside = (pos, a, b) => pos >= a && pos < b;
  const marks = (pos) => [from && inside(pos, from.at, end) && "copied",
    from && (inside(pos, from.at - from.n, from.at) || inside(pos, s.start - from.n, s.start)) && "matched"];
  const boxes = d.steps.map((p, i) => {
    const chips = p.tokens.map((x, j) => chip(x, j < p.kept ? "kept" : "own", ...marks(p.start + j)));
    if (p.ended) chips.push(el("span", { className: "own end", textContent: t("W-drafting.end") }));
    const box = el("button", { type: "button", className: "dr-pass" }, chips);
    box.setAttribute("aria-pressed", String(i === k));
    box.setAttribute("aria-label", t("W-drafting.pass-aria", { n: i + 1, tokens: p.tokens.length }));
    box.addEventListener("click", () => {  // that pass opened, its box keeping the focus
      setRange(byId("dr-step"), { value: i + 1 });
      drawPass(w, d, i);
      w.el.querySelectorAll(".dr-pass")[i].focus();
    });
    return box;
  });
  q(w.el, ".dr-stream").replaceChildren(...d.prompt.map((x, i) => chip(x, "prompt", ...marks(i))), ...boxes);
  q(w.el, ".dr-detail").replaceChildren(...detail(d, k));
}

/** what pass k did, in sentences: the prompt, one plain token, or a draft checked (✓ kept, ✗ refused, – not used) */
function detail(d, k) {
  const s = d.steps[k], own = s.tokens[s.tokens.length - 1], text = [...d.prompt, ...d.tokens];
  const head = el("p", { className: "dr-head" }, ...nodes("W-drafting.head", { n: k + 1, passes: d.steps.length,
    rows: s.rows }));
  if (k === 0 && !s.draft.length)
    return [head, el("p", {}, ...nodes(s.ended ? "W-drafting.plain-end" : "W-drafting.prompt-pass",
      { rows: s.rows, piece: s.ended ? "" : readable(own) }))];
  if (!s.draft.length)
    return [head, el("p", {}, ...nodes(s.ended ? "W-drafting.plain-end" : "W-drafting.plain-pass",
      { piece: s.ended ? "" : readable(own) }))];
  const out = [head];
  if (s.from) {
    const tail = text.slice(s.start - s.from.n, s.start).flatMap((x, i) => (i ? [" ", readable(x)] : [readable(x)]));
    const said = s.from.loop ? "W-drafting.lookup-loop" : "W-drafting.lookup";
    out.push(el("p", {}, ...nodes(said, { tail, n: s.from.n, k: s.draft.length })));
  }
  const kinds = ["kept", "refused", "dropped"], glyphs = { kept: "✓", refused: "✗", dropped: "–" };
  const drafted = s.draft.map((x, i) => {
    const kind = i < s.kept ? "kept" : i === s.kept ? "refused" : "dropped";
    return el("span", { className: `dr-d ${kind}` }, el("span", { className: "glyph", textContent: glyphs[kind] }),
      chip(x, kind));
  });
  const key = kinds.filter((kind) => (kind === "kept" ? s.kept > 0 : kind === "refused" ? s.kept < s.draft.length
    : s.kept + 1 < s.draft.length)).map((kind) => `${glyphs[kind]} ${t(`W-drafting.mark.${kind}`)}`).join(" · ");
  out.push(el("p", { className: "dr-draft" }, ...drafted, el("span", { className: "dr-key", textContent: key })));
  const all = s.kept === s.draft.length;
  const verdict = all ? (s.ended ? "W-drafting.kept-all-end" : "W-drafting.kept-all")
    : s.ended ? "W-drafting.refused-end" : "W-drafting.refused";
  out.push(el("p", {}, ...nodes(verdict, { k: s.draft.length, kept: s.kept, gained: s.tokens.length,
    piece: s.ended ? "" : readable(own), refused: all ? "" : readable(s.draft[s.kept]) })));
  return out;
}

/** the chart, the readout, the numbered prose and the table of every pass, from the whole run */
function tell(w, d, source) {
  const n = d.tokens.length, saved = d.plain.passes - d.passes;
  bars(q(w.el, ".chart"), [
    { label: t("W-drafting.bar.drafting"), value: d.passes, text: t("W-drafting.bar.passes", { n: d.passes }), mark: true },
    { label: t("W-drafting.bar.plain"), value: d.plain.passes, text: t("W-drafting.bar.passes", { n: d.plain.passes }),
      dim: true }], t("W-drafting.chart", { n }), { axis: t("W-drafting.axis") });
  w.say(["W-drafting.readout", { tokens: n, passes: d.passes, plain: d.plain.passes, saved }]);
  const c = d.drafts, m = d.metrics, refused = d.steps.filter((s) => s.draft.length && s.kept < s.draft.length).length;
  const p = d.prompt.length, extra = d.rows - d.plain.rows;
  told(w,
    d.same ? ["W-drafting.same", { n }] : ["W-drafting.differ", { k: d.first_difference + 1 }],
    !d.drafting ? ["W-drafting.no-native", {}]
      : [c.drafts ? ["W-drafting.drafts", { drafts: c.drafts, decode: d.passes - 1, drafted: c.drafted, kept: c.kept,
        share: fmt.pct(c.kept / c.drafted), refused }] : ["W-drafting.no-drafts", {}], ["W-drafting.policy", {}]],
    c.drafts && [extra ? ["W-drafting.rows", { rows: fmt.int(d.rows), plain: fmt.int(d.plain.rows), p, extra }]
      : ["W-drafting.rows-same", { rows: fmt.int(d.rows), p }],
    [d.agrees ? "W-drafting.metrics-agree" : "W-drafting.metrics-differ", { metrics: code("/metrics"),
      drafts: m.drafts, drafted: m.drafted, kept: m.kept }]],
    d.ended && ["W-drafting.ended", { n }],
    source === "prompt" && d.drafting && saved * 4 < d.plain.passes && ["W-drafting.try-list", {}]);
  const cols = ["pass", "rows", "draft", "kept", "own", "added"], heads = cols.map((col) => t(`W-drafting.col.${col}`));
  q(w.el, "thead tr").replaceChildren(...heads.map((h) => el("th", { scope: "col", textContent: h })));
  const pieces = (xs) => el("span", {}, ...xs.flatMap((x, i) => (i ? [" ", tokenSpan(pieceLabel(x))] : [tokenSpan(pieceLabel(x))])));
  q(w.el, "tbody").replaceChildren(...d.steps.map((s, i) => row([String(i + 1),
    i === 0 && !s.draft.length ? `${s.rows} (${t("W-drafting.prompt-row")})` : String(s.rows),
    s.draft.length ? pieces(s.draft) : t("W-drafting.none"), s.draft.length ? `${s.kept} / ${s.draft.length}` : "–",
    s.ended ? t("W-drafting.end") : tokenSpan(pieceLabel(s.tokens[s.tokens.length - 1])), String(s.tokens.length)],
  heads)));
}
