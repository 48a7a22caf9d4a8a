// The reading path: the core story stays in the page, the deeper widgets are folded under a one-line summary
// (<details class="deeper">). A folded widget still runs when the page opens, so it is never empty when opened, and
// it is drawn again at its box's width when it opens (a closed box has no width to draw at). A link to anything
// inside a fold opens it.

/** the widgets a first reading passes by, each behind its summary (strings/reading.js: "fold-<widget>") */
export const FOLDED = new Set([
  "W-depth", "W-residual",                                                    // §00
  "W-reach", "W-attention-map", "W-attention", "W-split", "W-norm",           // §01
  "W-logit-lens", "W-top-k", "W-top-p", "W-greedy-loop",                      // §03
  "W-autoregress", "W-cost-toy", "W-cost-gpt2",                               // §04
  "W-cache-memory", "W-cache-here", "W-position-bug",                         // §05
  "W-weights-vs-cache", "W-concurrency", "W-many-users", "W-param-split",     // §06
  "W-drafting",                                                                // beyond the loop
  "W-loop-walk", "W-loop-cost",                                               // §07
  "W-reopen",                                                                 // §08
]);

/** the word before a fold's summary: "Deeper:", or the recap's "In short:" */
const MARK = { "W-reopen": "fold.recap" };

/** `section` (a widget's markup) folded under its summary when the reading path passes it by */
export function fold(name, section) {
  if (!FOLDED.has(name)) return section;
  return `<details class="deeper" data-fold="${name}">
  <summary><span class="deeper-mark" data-text="${MARK[name] || "fold.deeper"}"></span> <span data-text="fold-${name}"></span></summary>
  ${section}
</details>`;
}

/** call `draw` whenever the fold around `el` (if any) opens */
export function onOpen(el, draw) {
  const box = el.closest("details.deeper");
  if (box) box.addEventListener("toggle", () => { if (box.open) draw(); });
}

/** open every fold around `target` (a link followed into one, a test that reads a folded widget) */
export function reveal(target) {
  for (let box = target && target.closest("details"); box; box = box.parentElement.closest("details")) box.open = true;
}

/** links within the page open the fold that holds their target before the browser scrolls to it */
export function revealLinks() {
  const follow = (hash) => { if (hash.length > 1) reveal(document.getElementById(decodeURIComponent(hash.slice(1)))); };
  document.addEventListener("click", (e) => {
    const a = e.target.closest && e.target.closest('a[href^="#"]');
    if (a) follow(a.getAttribute("href"));
  }, true);
  window.addEventListener("hashchange", () => follow(location.hash));
  follow(location.hash);
}
