// The model for the reader's language. The Chinese page runs on a model whose vocabulary reads Chinese (the explorer
// names it: /api/chinese-reader, decided from each vocabulary) where the page's own model spells Chinese characters
// in bytes; the English page goes back to the model it had. A Chinese prompt on a model that splits it into bytes,
// on either page, is said under the prompt, with a one-click switch to the model that reads it.
//
//   startModel(first)          the model a page opening in Chinese runs on (an id; null: the explorer's first)
//   mountReader(choose, first) the notice under the prompt, and the language toggle's model; choose(id) switches the
//                              page's model as the menu does (app.js)

import { get, post } from "./api.js";
import { byId, el } from "./dom.js";
import { hasBytes, nodes, onLang, piece, pieceLabel } from "./i18n.js";
import { followExamples, on, state } from "./state.js";

const HAN = /\p{Script=Han}/u;
let first = null;  // the explorer's first model
let auto = null;  // { from, to }: the model the Chinese page moved from, and to, until the reader picks another

const readsChinese = async (id) => (await get("/api/model", id ? { model: id } : {})).reads_chinese;
const chineseReader = async () => (await get("/api/chinese-reader")).model;

/** the model a page in Chinese runs on: the explorer's first where it reads Chinese, else the one that does (null:
 * the first) */
export async function startModel(firstModel) {
  first = firstModel;
  if (await readsChinese(null)) return null;
  const reader = await chineseReader();
  if (!reader || reader === first) return null;
  auto = { from: null, to: reader };
  return reader;
}

export function mountReader(choose, firstModel) {
  first = firstModel;
  const box = byId("prompt-notice");
  let seq = 0;
  async function render() {
    const mine = ++seq;
    const said = await notice(choose).catch(() => null);  // a prompt the lookup refuses: its widgets say why
    if (mine !== seq) return;
    box.hidden = !said;
    box.replaceChildren(...(said || []));
  }
  on("prompt", render);
  on("model", () => {
    if (auto && (state.model || first) !== auto.to) auto = null;  // chosen by the reader: kept
    render();
  });
  onLang(async (now) => {
    render();
    const current = state.model || first;
    if (now === "en" && auto && current === auto.to) {  // back to the model the English page had
      const { from } = auto;
      auto = null;
      return choose(from || first);
    }
    if (now === "zh" && !state.info?.reads_chinese) {
      const reader = await chineseReader().catch(() => null);
      if (reader && reader !== current) {
        auto = { from: current, to: reader };
        return choose(reader);
      }
    }
    followExamples();  // the same model: the examples follow the language
  });
  render();
}

/** the notice's nodes, or null when the prompt has no Chinese character this model spells in bytes */
async function notice(choose) {
  if (!state.info || state.info.reads_chinese) return null;
  const { tokens } = await post("/api/lookup", { prompt: state.prompt });
  const split = tokens.find((x) => x.char && HAN.test(x.char) && hasBytes(x.piece));
  if (!split) return null;
  const bytes = split.char_tokens.map((p) => pieceLabel(tokens[p].piece)).join(" ");
  const [reader, { display_names: names }] = await Promise.all([chineseReader(), get("/api/models")]);
  const out = nodes("reader.bytes", { model: state.info.display_name, char: piece(split.char, false),
    bytes: piece(bytes, false) });
  if (!reader) return [...out, " ", ...nodes("reader.none")];
  const button = el("button", { type: "button", className: "switch" }, ...nodes("reader.switch", { reader: names[reader] || reader }));
  button.addEventListener("click", () => choose(reader));
  return [...out, " ", button];
}
