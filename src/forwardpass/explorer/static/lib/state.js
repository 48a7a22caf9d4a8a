// What the whole page shares: the prompt at the top, the model it runs on (with that model's shape) and the
// language. The address bar keeps them (?model=, ?lang=, ?prompt= when not the default), so a reload or a shared
// link opens the same page; the language is also remembered in localStorage.
//
//   state.prompt, state.model (an id of /api/models, null: the explorer's first), state.info (/api/model)
//   state.toy       the language of the page's examples (its default prompt, the toy sentence): Chinese on the
//                   Chinese page when its model reads Chinese, else English
//   on("prompt" | "model" | "toy", fn)   called after the value changed (the language: i18n's onLang)

export const DEFAULT_PROMPTS = { en: "The cat sat on the mat, and the cat slept.", zh: "猫坐在垫子上，然后猫睡着了。" };
export const DEFAULT_PROMPT = DEFAULT_PROMPTS.en;
export const TOY_SENTENCES = { en: "the cat sat on the", zh: "猫坐在" };  // the toy example's (explorer/toy.py)
const url = new URLSearchParams(location.search);

export const state = {
  prompt: url.get("prompt") ?? DEFAULT_PROMPT,
  model: url.get("model"),
  info: null,
  toy: "en",
};

const listeners = { prompt: new Set(), model: new Set(), toy: new Set() };
export const on = (event, fn) => listeners[event].add(fn);
const emit = (event) => listeners[event].forEach((fn) => fn());

/** the language to start in: ?lang=, else the last one chosen here, else English */
export function startLang() {
  let saved = null;
  try { saved = localStorage.getItem("forwardpass-lang"); } catch { /* storage may be off */ }
  return url.get("lang") || saved || "en";
}

export function rememberLang(lang) {
  try { localStorage.setItem("forwardpass-lang", lang); } catch { /* storage may be off */ }
  save();
}

export function setPrompt(prompt) {
  if (prompt === state.prompt) return;
  state.prompt = prompt;
  save();
  emit("prompt");
}

/** another model: its shape first (it may load for a while), then every widget told */
export function setModel(model, info) {
  state.model = model;
  state.info = info;
  followExamples(false);
  save();
  emit("model");
}

const pageLang = () => (document.documentElement.lang === "zh-CN" ? "zh" : "en");

/** The examples in the page's language where its model reads it (else in English): the toy's language, and the
 * prompt where it is still a default one. `tell`: the toy's widgets told of a change (a model change tells every
 * widget anyway). */
export function followExamples(tell = true) {
  const toy = pageLang() === "zh" && state.info?.reads_chinese ? "zh" : "en";
  const changed = toy !== state.toy;
  state.toy = toy;
  if (Object.values(DEFAULT_PROMPTS).includes(state.prompt) && state.prompt !== DEFAULT_PROMPTS[toy]) {
    setPrompt(DEFAULT_PROMPTS[toy]);
    document.getElementById("prompt").value = state.prompt;
  }
  if (changed && tell) emit("toy");
}

function save() {
  const params = new URLSearchParams();
  if (state.model) params.set("model", state.model);
  params.set("lang", pageLang());
  if (state.prompt !== DEFAULT_PROMPTS[state.toy]) params.set("prompt", state.prompt);
  history.replaceState(null, "", `${location.pathname}?${params}${location.hash}`);
}
