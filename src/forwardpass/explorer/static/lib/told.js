// What every section's widgets share to tell their numbers: the numbered prose (the article's sentences that carry a
// widget's numbers, written from the result the widget draws, never typed in), one-click presets for the article's
// own states, and the two small pieces of punctuation the prose needs. The only home of these helpers.
//
//   told(w, ...items)   one paragraph per item, after the readout and before the closing prose; an item is a
//                       [key, values] pair, or a list of pairs joined into one paragraph with the language's
//                       sentence gap; falsy items (and falsy pairs inside a list) are skipped
//   preset(set, label, values?) a preset button's markup: it sets the controls {id: value, …}; its label the string
//                       `label` (with values), or { text } for one the same in every language ("T = 0.1")
//   presets(root, after?) buttons <button class="preset" data-set='{"id": value, …}'> inside root: each sets those
//                       controls as if the reader had moved them, then calls after() (default: an input event on its
//                       first control); each says whether it is the state shown (aria-pressed). Returns sync().
//   gap()               the space between two sentences: " " in English, "" after a Chinese full stop
//   times(x)            a ratio as the article writes it: 5, 10.5, 69.5 (one decimal at most)

import { showValue } from "./dom.js";
import { fmt, lang, nodes } from "./i18n.js";

/** the space between two sentences: one in English, none after a Chinese full stop */
export const gap = () => (lang() === "zh" ? "" : " ");

/** a ratio as the article writes it: 5, 10.5, 69.5 (one decimal at most, in the page's language) */
export const times = (x) => fmt.fixed(x, 1).replace(/\.0$/, "");

/** The widget's numbered prose, after its readout and before its closing paragraph: one paragraph per item, an item
 * a [key, values] pair or a list of them (joined into one paragraph with the sentence gap); falsy items skipped. */
export function told(w, ...items) {
  let box = w.el.querySelector(".prose.told");
  if (!box) {
    box = document.createElement("div");
    box.className = "prose told";
    w.el.querySelector(".prose.after").before(box);
  }
  box.replaceChildren(...items.filter(Boolean).map((item) => {
    const p = document.createElement("p");
    const pairs = (Array.isArray(item[0]) ? item : [item]).filter(Boolean);
    pairs.forEach(([key, values], i) => p.append(...(i && gap() ? [gap()] : []), ...nodes(key, values)));
    return p;
  }).filter((p) => p.childNodes.length));
}

/** a preset button's markup: pressing it sets each control of `set` ({id: value, …}); its label is the string
 * `label` filled with `values` (lib/i18n.js keeps it in the page's language), or { text }: a symbol and its value, the
 * same in every language */
export function preset(set, label, values = null) {
  const text = typeof label === "string" ? `data-text="${label}"${values ? ` data-text-values='${JSON.stringify(values)}'` : ""}>`
    : `>${label.text}`;
  return `<button type="button" class="preset" data-set='${JSON.stringify(set)}' ${text}</button>`;
}

/** Preset buttons (<button class="preset" data-set='{"id": value, …}'>) inside `root`: each sets those controls, as if
 * the reader had moved them, then calls after() (default: an input event on the first control). Each button says
 * whether it is the state shown (aria-pressed), also after the reader moves a control. Returns sync(), to call when
 * the controls are set some other way. */
export function presets(root, after) {
  const buttons = [...root.querySelectorAll("button.preset")];
  const wanted = (b) => Object.entries(JSON.parse(b.dataset.set));
  const value = (input) => (input.type === "checkbox" ? input.checked : input.value);
  const same = (input, v) => input && (input.type === "range" || input.type === "number"
    ? Number(value(input)) === Number(v) : String(value(input)) === String(v));
  const sync = () => buttons.forEach((b) => b.setAttribute("aria-pressed",
    String(wanted(b).every(([id, v]) => same(document.getElementById(id), v)))));
  buttons.forEach((b) => b.addEventListener("click", () => {
    const inputs = wanted(b).map(([id, v]) => {
      const input = document.getElementById(id);
      if (input.type === "checkbox") input.checked = Boolean(v);
      else input.value = v;
      if (input.type === "range") showValue(input);
      return input;
    });
    sync();
    if (after) after();
    else inputs[0].dispatchEvent(new Event("input"));
  }));
  const ids = new Set(buttons.flatMap((b) => wanted(b).map(([id]) => id)));
  ids.forEach((id) => {
    const input = document.getElementById(id);
    if (input) ["input", "change"].forEach((type) => input.addEventListener(type, sync));
  });
  sync();
  return sync;
}
