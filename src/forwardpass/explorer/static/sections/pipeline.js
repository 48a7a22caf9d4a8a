// §00 The pipeline: the token lookup, the six stages, parameters vs depth, add vs replace on the residual stream.

import { get, post } from "../lib/api.js";
import { bars, lines, rect, remember, svgOf, text } from "../lib/charts.js";
import { byId, debounce, el, q, row, setRange, stepper } from "../lib/dom.js";
import { fmt, piece, t } from "../lib/i18n.js";
import { state } from "../lib/state.js";
import { frame, sectionFrame, widget } from "../lib/widget.js";
import strings from "./pipeline.strings.js";

export { strings };

export const html = sectionFrame("s00", [
  frame("W-lookup", `
  <label for="lookup-pos" data-text="W-lookup.position"></label>
  <input id="lookup-pos" type="range" min="0" max="0" value="0">
  <table id="token-table" class="stack"><caption data-text="W-lookup.caption"></caption>
    <thead><tr><th scope="col" data-text="W-lookup.col.position"></th><th scope="col" data-text="W-lookup.col.id"></th>
    <th scope="col" data-text="W-lookup.col.piece"></th><th scope="col" data-text="W-lookup.col.row"></th></tr></thead>
    <tbody></tbody></table>`),
  frame("W-stages", `
  <button type="button" class="prev" data-text-aria="W-stages.prev">◀</button>
  <button type="button" class="next" data-text-aria="W-stages.next">▶</button>
  <ol class="stages"></ol>`),
  frame("W-depth", `
  <label for="depth-n" data-text="W-depth.n"></label>
  <input id="depth-n" type="range" min="1" max="96" value="12">
  <div class="chart" role="img"></div>`),
  frame("W-residual", `
  <fieldset><legend data-text="W-residual.legend"></legend>
    <label><input type="radio" name="residual" value="add" checked> <span data-text="W-residual.add"></span></label>
    <label><input type="radio" name="residual" value="replace"> <span data-text="W-residual.replace"></span></label>
  </fieldset>
  <div class="figure cells" role="img"></div>
  <div class="chart" role="img"></div>`),
]);

export function mount() {
  // ---- W-lookup: a token is a row number; the slider picks one (no request: the table holds every token)
  const lookup = widget("W-lookup", {
    runsOn: "prompt", follows: ["prompt", "model"],
    load: () => post("/api/lookup", { prompt: state.prompt }),
    draw(data) {
      const slider = byId("lookup-pos"), last = data.tokens.length - 1;
      const at = setRange(slider, { max: Math.max(0, last), value: Math.min(+slider.value, last) });
      const chosen = data.tokens[at];
      const heads = ["position", "id", "piece", "row"].map((c) => t(`W-lookup.col.${c}`));
      q(lookup.el, "tbody").replaceChildren(...data.tokens.map((tok) => {
        const tr = row([String(tok.position), String(tok.id), [{ text: JSON.stringify(tok.piece), tag: "tok" }],
          `[${tok.row.join(", ")}, …]`], heads);
        if (tok.position === at) tr.className = "current";
        else if (tok.id === chosen.id) tr.className = "repeat";
        return tr;
      }));
      const same = data.tokens.filter((x) => x.id === chosen.id).map((x) => String(x.position));
      const word = (x) => x.piece.trim().toLowerCase();
      const kin = data.tokens.filter((x) => x.id !== chosen.id && word(x) === word(chosen) && word(x) !== "");
      lookup.say(["W-lookup.readout", { at, piece: piece(chosen.piece), id: chosen.id, vocab: data.vocab_size }],
        ...(same.length > 1 ? [["W-lookup.same", { list: fmt.list(same, true) }]] : []),
        ...(kin.length ? [["W-lookup.kin", { piece: piece(kin[0].piece), position: kin[0].position, id: kin[0].id }]] : []));
    },
  });
  byId("lookup-pos").addEventListener("input", () => lookup.redraw());

  // ---- W-stages: the six stages with the shapes between them, on the page's model
  const stages = widget("W-stages", {
    runsOn: "model", follows: ["model"],
    load: async () => state.info,
    draw(info) {
      const c = info.config, at = step.at();
      const shapes = [t("W-stages.shape.0"), `(T, ${c.d_model})`, t("W-stages.shape.2", { n: c.n_layers, d: c.d_model }),
        `(T, ${c.d_model})`, `(T, ${c.d_model}) → (T, ${c.vocab_size})`, t("W-stages.shape.5", { v: c.vocab_size })];
      const names = shapes.map((_, i) => t(`W-stages.stage.${i}`));
      q(stages.el, ".stages").replaceChildren(...shapes.map((shape, i) => el("li", {
        className: [i === 2 ? "tall" : "", i === at ? "current" : "", i < at ? "done" : ""].join(" ").trim(),
        textContent: `${names[i]} — ${shape}` })));
      stages.say(["W-stages.readout", { at: at + 1, name: names[at], shape: shapes[at] }]);
    },
  });
  const step = stepper(stages.el, () => 6, () => stages.redraw());

  // ---- W-depth: GPT-2 small's width, N blocks
  const depth = widget("W-depth", {
    runsOn: "runs-on.gpt2",
    load: () => get("/api/depth", { n: byId("depth-n").value }),
    draw(d) {
      lines(q(depth.el, ".chart"), [d.series], { names: [t("W-depth.series")], x: t("W-depth.x"), y: t("W-depth.y"),
        markX: d.n_layers });
      depth.say(["W-depth.readout", { n: d.n_layers, total: fmt.params(d.total), exact: fmt.int(d.total),
        ratio: d.ratio_to_12.toFixed(2), block: fmt.params(d.per_block) }]);
    },
  });
  byId("depth-n").addEventListener("input", debounce(() => depth.run(), 120));

  // ---- W-residual: every sublayer adds into the stream, or (the counterfactual) replaces it
  const residual = widget("W-residual", {
    runsOn: "prompt", follows: ["prompt", "model"],
    load: () => post("/api/residual", { prompt: state.prompt, mode: q(residual.el, "input[name=residual]:checked").value }),
    draw(d) {
      const mode = t(`W-residual.mode.${d.mode}`);
      bars(q(residual.el, ".chart"), d.next.map((x) => ({ label: JSON.stringify(x.piece), token: true,
        value: x.probability, text: fmt.pct(x.probability), mark: d.mode === "replace" })),
      t("W-residual.chart", { mode }));
      cells(q(residual.el, ".cells"), d.mode);
      residual.say(["W-residual.readout", { mode, shape: d.stream_shapes[0].join(" × "), n: d.stream_shapes.length,
        piece: piece(d.next[0].piece), p: fmt.pct(d.next[0].probability) }],
      ...(d.mode === "replace" ? [["W-residual.erased"]] : []));
    },
  });
  residual.el.querySelectorAll("input[name=residual]").forEach((r) => r.addEventListener("change", () => residual.run()));
}

// The residual stream as a row of cells: each sublayer's output is added into it (or, replacing, written over it).
function cells(box, mode) {
  remember(box, () => cells(box, mode));
  const [svg, width] = svgOf(box, 116), n = 8, size = Math.min(34, (width - 150) / n);
  const layers = [[3, -1, 2, 0, 1, -2, 1, 2], [1, 2, -1, 1, 0, 1, -1, 0], [0, -1, 1, 2, -1, 0, 2, -1]];
  let stream = Array(n).fill(0);
  layers.forEach((add, r) => {
    stream = mode === "add" ? stream.map((x, i) => x + add[i]) : add.slice();
    const name = t(`W-residual.row.${r}`);
    svg.appendChild(text(4, 22 + r * 36, r === 0 ? name : `${mode === "add" ? "+" : "→"} ${name}`));
    stream.forEach((x, i) => rect(svg, { x: 120 + i * size, y: 6 + r * 36, width: size - 3, height: 28, rx: 3,
      fill: x === 0 ? "#eef0f3" : x > 0 ? "#cfe0fb" : "#f8d7c9", stroke: "#8a939e" }, String(x)));
  });
  box.replaceChildren(svg);
  box.setAttribute("aria-label", t(`W-residual.cells.${mode}`, { cells: stream.join(", ") }));
}
