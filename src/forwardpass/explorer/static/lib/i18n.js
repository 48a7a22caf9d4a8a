// Every visible word of the page in English and Chinese, and numbers written as each language writes them.
//
// Strings live in one table per section (sections/<name>.strings.js) plus the page's own (strings/common.js), each
// entry `key: [english, chinese]`. An entry is a template with {name} slots, or a function of the values returning
// one (for plurals: `({ n }) => plural(n, "{n} token", "{n} tokens")`). A template may hold <code>, <cite>, <em> and
// <tok> (a token piece) tags; nothing else is markup.
//
//   t(key, values)     the string (for attributes, titles, aria labels, SVG text)
//   parts(key, values) the same as [{ text, tag }] pieces, so that token pieces and code keep their own element
//   nodes(key, values) the same as DOM nodes, for a readout or a paragraph
//   apply(root)        fills every [data-text] (text), [data-text-aria] (aria-label), [data-text-title] (title)
// A value made by piece(s) or code(s) is drawn as a token piece or code wherever it goes; a DOM node value is put in
// as it is.

const LANGS = ["en", "zh"];
const table = {};
const listeners = new Set();
let current = "en";

export function register(strings, owner) {
  for (const [key, entry] of Object.entries(strings)) {
    if (key in table) console.error(`i18n: ${key} is defined twice (${owner})`);
    if (!Array.isArray(entry) || entry.length !== 2 || entry.some((e) => e === "" || e === undefined))
      console.error(`i18n: ${key} needs an English and a Chinese entry (${owner})`);
    table[key] = entry;
  }
}

export const lang = () => current;
/** an English count's noun: plural(n, "{n} token", "{n} tokens"); n a number or a number written as a string */
export const plural = (n, one, many) => (Number(String(n).replace(/,/g, "")) === 1 ? one : many);
export const has = (key) => key in table;
export const onLang = (fn) => listeners.add(fn);

export function setLang(next) {
  current = LANGS.includes(next) ? next : "en";
  document.documentElement.lang = current === "zh" ? "zh-CN" : "en";
  apply(document);
  listeners.forEach((fn) => fn(current));
}

// ---- values that keep their own element -------------------------------------------------------------------------
class Marked { constructor(text, tag) { this.text = text; this.tag = tag; } toString() { return this.text; } }
/** a token piece as the whole page writes it (pieceLabel: quoted, raw bytes ⟨E7⟩, whitespace ␣ ↵), or as it is
 * when `quote` is false (a word of the toy example, a character) */
export const piece = (s, quote = true) => new Marked(quote ? pieceLabel(s) : s, "tok");
/** a code identifier or a line of code */
export const code = (s) => new Marked(s, "code");

// ---- token pieces as the whole page writes them ---------------------------------------------------------------
// A piece holding raw bytes (part of a character: byte-level vocabularies spell most Chinese characters in their
// UTF-8 bytes, and the tokenizer names them <0xE7>) is written ⟨E7⟩, a run of them ⟨E5 9D⟩; a piece of only
// whitespace is written with visible marks (␣ a space, ↵ a line break, ⇥ a tab), so " " and "  " differ on screen;
// any other piece is its text quoted, its spaces and escapes visible (" the", "\n"). Every piece on the page goes
// through pieceLabel (piece, readable); the page explains the writing once, under the first token table
// (W-lookup.writing).
const BYTE_RUN = /(?:<0x[0-9A-F]{2}>)+/g;
const BLANK = { " ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍" };

/** whether a piece holds raw bytes (the tokenizer names them <0xE5>) */
export const hasBytes = (s) => /<0x[0-9A-F]{2}>/.test(s);
/** whether a piece is only whitespace (drawn with ␣ ↵ ⇥) */
export const isBlank = (s) => s.length > 0 && /^\s+$/.test(s);

/** a token piece as the page writes it, as a string: "<0xE5><0x9D>" → ⟨E5 9D⟩, "  " → ␣␣, " cat" → " cat" */
export function pieceLabel(s) {
  if (isBlank(s)) return [...s].map((ch) => BLANK[ch] ?? "␣").join("");
  const out = [];
  let at = 0;
  for (const m of s.matchAll(BYTE_RUN)) {
    if (m.index > at) out.push(JSON.stringify(s.slice(at, m.index)));
    out.push(`⟨${[...m[0].matchAll(/0x([0-9A-F]{2})/g)].map((b) => b[1]).join(" ")}⟩`);
    at = m.index + m[0].length;
  }
  if (at < s.length || !out.length) out.push(JSON.stringify(s.slice(at)));
  return out.join("");
}

/** a token piece as the page writes it (pieceLabel), as a value for a template: drawn as a token piece */
export const readable = (s) => piece(s);

// ---- numbers --------------------------------------------------------------------------------------------------
const locale = () => (current === "zh" ? "zh-CN" : "en-US");
const trim = (s) => s.replace(/\.0+$|(\.\d*?)0+$/, "$1");
export const fmt = {
  int: (n) => Math.round(n).toLocaleString(locale()),
  fixed: (x, digits) => (Math.abs(x) < 0.5 * 10 ** -digits ? 0 : x).toFixed(digits),  // never "-0.0"
  pct: (x) => `${fmt.fixed(100 * x, 1)}%`,
  gib: (x) => `${x.toFixed(2)} GiB`,
  /** a parameter count: 124.4M / 1.2B; in Chinese 1.24 亿 / 708.8 万 */
  params(n) {
    if (current === "zh") return n >= 1e8 ? `${(n / 1e8).toFixed(2)} 亿` : n >= 1e4 ? `${(n / 1e4).toFixed(1)} 万` : fmt.int(n);
    return n >= 1e9 ? `${(n / 1e9).toFixed(1)}B` : n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : fmt.int(n);
  },
  /** an axis tick: short, exact for round numbers (100M, 1.5K; in Chinese 1 亿, 1.5 万) */
  tick(n) {
    const a = Math.abs(n);
    const steps = current === "zh" ? [[1e8, "亿"], [1e4, "万"]] : [[1e9, "B"], [1e6, "M"], [1e3, "K"]];
    for (const [size, unit] of steps) if (a >= size) return `${trim((n / size).toFixed(2))}${current === "zh" ? " " : ""}${unit}`;
    return Number.isInteger(n) ? fmt.int(n) : trim(n.toFixed(3));
  },
  /** items joined as the language lists them: "a, b and c" / "a、b 和 c" (lists: ", " and "、") */
  list: (items, and = false) => {
    const sep = current === "zh" ? "、" : ", ";
    if (!and || items.length < 2) return joined(items, sep);
    return [...joined(items.slice(0, -1), sep), current === "zh" ? " 和 " : " and ", items[items.length - 1]];
  },
};
function joined(items, sep) { return items.flatMap((x, i) => (i ? [sep, x] : [x])); }

// ---- templates ------------------------------------------------------------------------------------------------
const TAGS = /<(code|cite|em|tok)>(.*?)<\/\1>/gs;

/** [{ text, tag }]: the entry for `key` in the page's language, its {slots} filled */
export function parts(key, values = {}) {
  const entry = table[key];
  if (!entry) { console.error(`i18n: no string ${key}`); return [{ text: key }]; }
  let template = entry[current === "zh" ? 1 : 0];
  if (typeof template === "function") template = template(values);
  const out = [];
  let at = 0;
  for (const m of template.matchAll(TAGS)) {
    fill(template.slice(at, m.index), values, out);
    fill(m[2], values, out, m[1]);
    at = m.index + m[0].length;
  }
  fill(template.slice(at), values, out);
  return out;
}

function fill(text, values, out, tag) {
  let at = 0;
  for (const m of text.matchAll(/\{(\w+)\}/g)) {
    if (m.index > at) out.push({ text: text.slice(at, m.index), tag });
    if (!(m[1] in values)) console.error(`i18n: no value for {${m[1]}}`);
    value(values[m[1]], out, tag);
    at = m.index + m[0].length;
  }
  if (at < text.length) out.push({ text: text.slice(at), tag });
}

function value(v, out, tag) {
  if (Array.isArray(v)) v.forEach((x) => value(x, out, tag));
  else if (v instanceof Marked) out.push({ text: v.text, tag: v.tag });
  else if (typeof Node !== "undefined" && v instanceof Node) out.push({ text: v.textContent, node: v });
  else if (typeof v === "number") out.push({ text: Number.isInteger(v) ? fmt.int(v) : String(v), tag });
  else out.push({ text: String(v ?? ""), tag });
}

export const t = (key, values) => parts(key, values).map((p) => p.text).join("");

/** DOM nodes for parts: token pieces as <span class="token" data-token>, code as <code>, citations as <cite> */
export function toNodes(list) {
  return list.map(({ text, tag, node }) => {
    if (node) return node;
    if (!tag) return document.createTextNode(text);
    const el = document.createElement(tag === "tok" ? "span" : tag);
    if (tag === "tok") { el.className = "token"; el.dataset.token = ""; }
    el.textContent = text;
    return el;
  });
}

export const nodes = (key, values) => toNodes(parts(key, values));

/** every [data-text*] element under root, in the page's language */
export function apply(root = document) {
  root.querySelectorAll("[data-text]").forEach((el) => el.replaceChildren(...nodes(el.dataset.text,
    el.dataset.textValues ? JSON.parse(el.dataset.textValues) : undefined)));
  root.querySelectorAll("[data-text-aria]").forEach((el) => el.setAttribute("aria-label", t(el.dataset.textAria)));
  root.querySelectorAll("[data-text-title]").forEach((el) => el.setAttribute("title", t(el.dataset.textTitle)));
}
