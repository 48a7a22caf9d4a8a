// Pieces §06–§08 share: the article's sentences that carry a widget's numbers (written from the result the widget
// draws, never typed into the prose), one-click presets for the article's own states, and links to a widget that
// carry its section's number as the heading shows it.

import { showValue } from "./dom.js";
import { fmt, lang, nodes, t } from "./i18n.js";

/** The widget's numbered prose, after its readout and before its closing paragraph: one paragraph per item, an item
 * a [key, values] pair or a list of them (joined into one paragraph); falsy items are skipped. */
export function told(w, ...items) {
  let box = w.el.querySelector(".prose.told");
  if (!box) {
    box = document.createElement("div");
    box.className = "prose told";
    w.el.querySelector(".prose.after").before(box);
  }
  box.replaceChildren(...items.filter(Boolean).map((item) => {
    const p = document.createElement("p");
    const parts = Array.isArray(item[0]) ? item : [item];
    parts.filter(Boolean).forEach(([key, values], i) => p.append(...(i && lang() !== "zh" ? [" "] : []), ...nodes(key, values)));
    return p;
  }));
}

/** Preset buttons (<button class="preset" data-set='{"id": value, …}'>) inside `root`: each sets those controls, as if
 * the reader had moved them, then calls after() (default: an input event on the first control). Each button says
 * whether it is the state shown (aria-pressed). Returns sync(), to call when the controls move. */
export function presets(root, after) {
  const buttons = [...root.querySelectorAll("button.preset")];
  const wanted = (b) => Object.entries(JSON.parse(b.dataset.set));
  const value = (input) => (input.type === "checkbox" ? input.checked : input.value);
  const sync = () => buttons.forEach((b) => b.setAttribute("aria-pressed",
    String(wanted(b).every(([id, v]) => String(value(document.getElementById(id))) === String(v)))));
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
  sync();
  return sync;
}

/** "§6 · title": a widget's (or an element's) place, numbered as its section's heading is ("6. What it costs" → 6) */
export function placeOf(target) {
  const section = target.closest("main > section[id]");
  const heading = section ? section.querySelector("h2").textContent : "";
  const number = (heading.match(/^\s*(\d+)/) || [])[1];
  const name = target.matches("[data-widget]") ? target.querySelector("h3").textContent
    : target.dataset.place ? t(target.dataset.place) : target.textContent;
  return { number, name, section: section ? section.id : null };
}

/** a link to `target` (a widget's frame or an element with an id): "§6 · its title" */
export function linkTo(target) {
  const { number, name } = placeOf(target);
  const a = document.createElement("a");
  a.href = `#${target.id || target.querySelector("h3").id}`;
  a.textContent = t("link.place", { n: number ?? "?", name });
  a.dataset.section = number ?? "";
  return a;
}

// ---- numbers as each language writes them (their units' words are in sections/cost.strings.js: unit.*) -----------
export const one = (x) => fmt.fixed(x, 1);
const short = (v) => (v >= 100 ? fmt.int(v) : v.toFixed(v >= 10 ? 1 : 2));

/** a rate per second, of bytes or FLOPs: in G and T (English), in 亿 and 万亿 (Chinese) */
export function perSecond(x, kind) {
  const [v, scale] = lang() === "zh" ? (x >= 1e12 ? [x / 1e12, "万亿"] : [x / 1e8, "亿"])
    : (x >= 1e12 ? [x / 1e12, "T"] : [x / 1e9, "G"]);
  return t(`unit.${kind}-per-s`, { v: short(v), scale });
}

/** bytes in KiB, MiB or GiB */
export function bytes(n) {
  if (n < 2 ** 20) return t("unit.kib", { v: (n / 2 ** 10).toFixed(1) });
  if (n < 2 ** 30) return t("unit.mib", { v: (n / 2 ** 20).toFixed(1) });
  return fmt.gib(n / 2 ** 30);
}

/** a time: milliseconds under a second (to 0.1 ms under 10 ms), else seconds */
export function seconds(s) {
  if (s < 0.01) return t("unit.ms", { v: (s * 1000).toFixed(1) });
  return s < 1 ? t("unit.ms", { v: fmt.int(s * 1000) }) : t("unit.s", { v: s.toFixed(2) });
}
