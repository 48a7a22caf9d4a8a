// A widget: its frame (title, what it runs on, prose before and after, a notice, one readout), its last result, and
// honest states. What it shows is always one of: its current result; its last result marked out of date (the prompt
// or the model changed since an on-demand run, or a request failed: the notice says which); an error, inside it.
//
//   const w = widget("W-name", {
//     runsOn: "prompt" | "own-prompt" | "model" | "<string key saying its fixed input>",
//     follows: ["prompt", "model"],     // what makes its result out of date
//     auto: true,                       // re-run itself when those change (false: on demand, marked out of date)
//     first: true,                      // on demand, but run once when the page opens (beside the automatic ones),
//                                       // so it shows a result, not an empty frame, until the reader runs it
//     later: true,                      // automatic, but slow (it runs and times the model many times): run after
//                                       // the other automatic widgets, so they are not kept waiting behind it
//     load: async () => data,           // fetch (reads its controls and the page's state)
//     draw: (data) => {},               // draw from data only: called again on a language change
//     idle: "not-run",                  // the readout before its first result (on-demand widgets)
//   });
//   w.run()  load then draw (a run overtaken by a newer one is dropped); w.redraw(); w.outdate("inputs");
//   w.fail(error)  an error of the widget's own (a request outside run()), shown in it
//   w.say(["key", values], node, …)     the readout, in the page's language

import { code, has, nodes, t } from "./i18n.js";
import { working } from "./api.js";
import { fold, onOpen } from "./reading.js";
import { state } from "./state.js";

const all = [];  // every widget, in the page's order

/** the widget's markup around `inner` (its controls and outputs); `noControl`: it shows something as it is; folded
 * under its summary where the reading path passes it by (reading.js) */
export function frame(name, inner, { noControl = false } = {}) {
  return fold(name, `<section class="widget" data-widget="${name}" aria-labelledby="h-${name}"${noControl ? " data-no-control" : ""}>
  <h3 id="h-${name}" data-text="title-${name}"></h3>
  <p class="runs-on"></p>
  <p class="prose" data-text="before-${name}"></p>
  ${inner}
  <p class="notice" hidden></p>
  <p class="readout" aria-live="polite"></p>
  <p class="prose after" data-text="after-${name}"></p>
</section>`);
}

/** a section's markup: its heading and introduction, then its widgets */
export function sectionFrame(id, widgets) {
  return `<section id="${id}" aria-labelledby="h-${id}">
<h2 id="h-${id}" data-text="title-${id}"></h2>
<p class="prose" data-text="intro-${id}"></p>
${widgets.join("\n")}
</section>`;
}

export function widget(name, spec) {
  const root = document.querySelector(`[data-widget="${name}"]`);
  if (!root) throw new Error(`no widget ${name} on the page`);
  const w = new Widget(name, root, spec);
  all.push(w);
  return w;
}

class Widget {
  constructor(name, root, { runsOn, follows = [], auto = true, first = false, later = false, load = async () => null,
    draw = () => {}, idle }) {
    Object.assign(this, { name, el: root, runsOn, follows, auto, first, later, load, draw, idle });
    this.data = null;
    this.notice = null;  // { key, values } or { error }
    this.seq = 0;
    this.setState("idle");
    onOpen(root, () => this.redraw());  // drawn at its box's width once its fold opens
  }

  q(sel) { return this.el.querySelector(sel); }

  setState(s) { this.el.dataset.state = s; }

  async run() {
    const mine = ++this.seq;
    this.el.setAttribute("aria-busy", "true");
    try {
      const data = await working(this.load());  // the status line says "computing" until it has all it asked
      if (mine !== this.seq) return;  // overtaken by a newer run
      this.data = data;
      this.notice = null;
      this.setState("current");
      this.redraw();
    } catch (error) {
      if (mine === this.seq) this.fail(error);
    } finally {
      if (mine === this.seq) this.el.removeAttribute("aria-busy");
    }
  }

  fail(error) {
    this.notice = { error };
    this.setState(this.data === null ? "error" : "stale");  // its last picture stays, marked out of date
    this.redraw();
  }

  /** an on-demand widget's result no longer matches its input: reason "prompt", "model" or "inputs" */
  outdate(reason) {
    if (this.data === null) return;
    this.notice = { key: `notice.stale.${reason}` };
    this.setState("stale");
    this.renderNotice();
  }

  redraw() {
    this.renderRunsOn();
    if (this.data !== null) this.draw(this.data);
    else if (this.idle) this.say([this.idle]);
    this.renderNotice();
  }

  say(...items) {
    this.q(".readout").replaceChildren(...items.flatMap((item) =>
      item instanceof Node ? [item] : typeof item === "string" ? [document.createTextNode(item)] : nodes(...item)));
  }

  renderRunsOn() {
    const model = state.info ? state.info.display_name : "";
    const key = ["prompt", "own-prompt", "model"].includes(this.runsOn) ? `runs-on.${this.runsOn}` : this.runsOn;
    this.q(".runs-on").replaceChildren(...nodes(key, { model }));
  }

  renderNotice() {
    const box = this.q(".notice"), n = this.notice;
    box.hidden = !n;
    box.className = n && n.error ? "notice error" : "notice";
    box.setAttribute("role", n && n.error ? "alert" : "note");
    if (!n) return box.replaceChildren();
    if (!n.error) return box.replaceChildren(...nodes(n.key, n.values));
    const shown = this.data !== null ? nodes("notice.previous") : [];
    box.replaceChildren(...nodes("notice.error", { message: errorNode(n.error) }), ...shown);
  }
}

/** an ApiError in the page's language: its code's sentence, else the server's own words (marked as English) */
function errorNode(error) {
  const key = `error.${error.code}`;
  if (error.code && has(key)) {
    const params = { ...error.params };
    if ("what" in params)  // the quantity's name, translated, or the identifier it is (N, d_model)
      params.what = has(`what.${params.what}`) ? t(`what.${params.what}`) : code(String(params.what));
    for (const name of ["type", "model"]) if (name in params) params[name] = code(String(params[name]));
    const span = document.createElement("span");
    span.append(...nodes(key, params));
    return span;
  }
  const span = document.createElement("span");
  span.className = "server-message";
  span.lang = "en";
  span.textContent = error.message;
  return span;
}

/** the automatic widgets among `ws` in the order they run: the page's order, the slow ones (later: true) last */
const inTurn = (ws) => [...ws.filter((w) => w.auto && !w.later), ...ws.filter((w) => w.auto && w.later)];

/** every widget that follows `event` ("prompt", "model"): the automatic ones run again, one after another (inTurn; a
 * newer change takes over the rest), the on-demand ones are marked out of date */
let generation = 0;
export function refresh(event) {
  const mine = ++generation;
  const following = all.filter((w) => w.follows.includes(event));
  following.filter((w) => !w.auto).forEach((w) => w.outdate(event));
  return working((async () => {  // busy from the first request to the last, not idle between two
    for (const w of inTurn(following)) {
      if (mine !== generation) return;
      await w.run();
    }
  })());
}

/** the first run, three queues at once: the widgets on fixed inputs, the prompt's widgets in turn (inTurn, their
 * questions all asked at the start), and the on-demand widgets that show a first result (first: true) one after
 * another */
export function start() {
  all.forEach((w) => w.redraw());
  const inOrder = async (ws) => { for (const w of ws) await w.run(); };
  const chain = inTurn(all.filter((x) => x.follows.includes("prompt")));
  // every question asked at once (the explorer answers them one after another while the page draws), each widget
  // drawn in turn from its answer (api.js hands the same answer to its run); the slow ones (later) in their turn
  chain.filter((w) => !w.later).forEach((w) => w.load().catch(() => {}));
  return working(Promise.all([
    ...all.filter((w) => w.auto && !w.follows.includes("prompt")).map((w) => w.run()),
    inOrder(chain),
    inOrder(all.filter((x) => !x.auto && x.first && x.data === null)),
  ]));
}

/** every widget again in the page's language (from the results it holds: nothing is asked again) */
export function redrawAll() { all.forEach((w) => w.redraw()); }

export const widgets = () => all;
