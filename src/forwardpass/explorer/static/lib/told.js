// The article's sentences that carry a widget's numbers: a paragraph after the widget's readout, written from the
// same result the widget draws (never a number typed into the prose), in the page's language.

import { nodes } from "./i18n.js";

/** the widget's numbered prose: items are [key, values] pairs, joined into one paragraph (or several: "¶") */
export function told(w, ...items) {
  let p = w.el.querySelector(".prose.told");
  if (!p) {
    p = document.createElement("div");
    p.className = "prose told";
    w.el.querySelector(".prose.after").before(p);
  }
  const paragraphs = [[]];
  for (const item of items) {
    if (item === "¶") paragraphs.push([]);
    else if (item) paragraphs[paragraphs.length - 1].push(...nodes(...item));
  }
  p.replaceChildren(...paragraphs.filter((x) => x.length).map((x) => {
    const e = document.createElement("p");
    e.append(...x);
    return e;
  }));
}
