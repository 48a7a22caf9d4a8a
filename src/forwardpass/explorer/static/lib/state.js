// What the whole page shares: the prompt at the top, the model it runs on (with that model's shape) and the
// language. The address bar keeps them (?model=, ?lang=, ?prompt= when not the default), so a reload or a shared
// link opens the same page; the language is also remembered in localStorage.
//
//   state.prompt, state.model (an id of /api/models, null: the explorer's first), state.info (/api/model)
//   on("prompt" | "model", fn)   called after the value changed (the language: i18n's onLang)

export const DEFAULT_PROMPT = "The cat sat on the mat, and the cat slept.";
const url = new URLSearchParams(location.search);

export const state = {
  prompt: url.get("prompt") ?? DEFAULT_PROMPT,
  model: url.get("model"),
  info: null,
};

const listeners = { prompt: new Set(), model: new Set() };
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
  save();
  emit("model");
}

function save() {
  const params = new URLSearchParams();
  if (state.model) params.set("model", state.model);
  params.set("lang", document.documentElement.lang === "zh-CN" ? "zh" : "en");
  if (state.prompt !== DEFAULT_PROMPT) params.set("prompt", state.prompt);
  history.replaceState(null, "", `${location.pathname}?${params}${location.hash}`);
}
