// Small DOM helpers shared by the sections.

import { toNodes } from "./i18n.js";

export const q = (root, sel) => root.querySelector(sel);
export const byId = (id) => document.getElementById(id);

/** an element: el("li", { className: "x" }, child, …) (children: nodes or strings) */
export function el(tag, props = {}, ...children) {
  const e = Object.assign(document.createElement(tag), props);
  e.append(...children.flat());
  return e;
}

/** model text or a token piece, kept as it is (never translated): <span class="token" data-token> */
export function tokenSpan(s) {
  const e = el("span", { className: "token", textContent: s });
  e.dataset.token = "";
  return e;
}

/** a table row whose cells carry their column's name (narrow screens show it beside each value); a cell is a
 * string, a node, or parts from i18n.parts */
export function row(values, labels, cell = "td") {
  const tr = document.createElement("tr");
  values.forEach((v, i) => {
    const td = document.createElement(cell);
    if (Array.isArray(v)) td.append(...toNodes(v));
    else td.append(v);
    td.dataset.label = labels[i];
    tr.appendChild(td);
  });
  return tr;
}

/** a slider's value beside it (an <output>), also said to assistive technology; call after setting value or max */
export function showValue(input) {
  let out = input.nextElementSibling;
  if (!out || out.tagName !== "OUTPUT") {
    out = document.createElement("output");
    out.htmlFor = input.id;
    input.after(out);
  }
  out.textContent = input.value;
  input.setAttribute("aria-valuetext", input.value);
}

/** a slider's range, its value kept inside it and shown (a new prompt with fewer tokens moves a token slider) */
export function setRange(input, { min, max, value }) {
  if (min !== undefined) input.min = min;
  if (max !== undefined) input.max = max;
  if (value !== undefined) input.value = value;
  showValue(input);
  return +input.value;
}

/** fn after the events have paused for `delay` ms */
export function debounce(fn, delay) {
  let timer;
  return (...args) => { clearTimeout(timer); timer = setTimeout(() => fn(...args), delay); };
}

/** ◀ ▶ buttons over `count()` steps; render(at) on each move; returns go(i) */
export function stepper(root, count, render) {
  let at = 0;
  const go = (i) => { at = Math.max(0, Math.min(count() - 1, i)); render(at); };
  q(root, ".prev").addEventListener("click", () => go(at - 1));
  q(root, ".next").addEventListener("click", () => go(at + 1));
  return { go, at: () => at };
}
