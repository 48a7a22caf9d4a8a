// The explorer's page: the article's sections in order, each its own module (sections/<name>.js: its markup, its
// widgets; sections/<name>.strings.js: its words), over shared pieces in lib/. The server computes, the page draws:
// every number comes from the JSON endpoints, every word from a string table, in English or Chinese.

import { get, onBusy } from "./lib/api.js";
import { byId, debounce, showValue } from "./lib/dom.js";
import { code, lang, nodes, onLang, register, setLang, t } from "./lib/i18n.js";
import { mountReader, startModel } from "./lib/reader.js";
import { on, rememberLang, setModel, setPrompt, startLang, state } from "./lib/state.js";
import { redrawAll, refresh, start } from "./lib/widget.js";
import { revealLinks } from "./lib/reading.js";
import common from "./strings/common.js";
import reading from "./strings/reading.js";
import * as block from "./sections/block.js";
import * as cache from "./sections/cache.js";
import * as cost from "./sections/cost.js";
import * as drafting from "./sections/drafting.js";
import * as loop from "./sections/loop.js";
import * as mechanism from "./sections/mechanism.js";
import * as pipeline from "./sections/pipeline.js";
import * as recap from "./sections/recap.js";
import * as runnable from "./sections/runnable.js";
import * as sampling from "./sections/sampling.js";

// the article's order: §00 … §08 (mechanism has no section of its own: block.js places its widget inside §2)
const SECTIONS = { pipeline, block, mechanism, sampling, loop, cache, cost, drafting, runnable, recap };

// ---- the status line at the top: a model loading, else whether any request is still being answered ----------------
let loading = null, inFlight = 0;
function renderStatus() {
  byId("status").textContent = loading ? t("status.loading", { model: loading }) : inFlight ? t("status.computing") : "";
}
onBusy((n) => { inFlight = n; renderStatus(); });

// ---- the model menu: another model without leaving the page (the prompt and every control stay) ---------------------
let names = {}, first = null;

function showModel(info) {
  byId("model-name").textContent = info.display_name;
}

function modelError(id, error) {
  const box = byId("model-error");
  box.hidden = !error;
  box.replaceChildren(...(error ? nodes("status.model-failed", { model: names[id] || id, message: code(error.message) }) : []));
}

async function chooseModel(id) {
  const before = state.model || first;
  loading = names[id] || id;
  renderStatus();
  try {
    const info = await get("/api/model", { model: id });
    modelError(id, null);
    showModel(info);
    setModel(id === first ? null : id, info);  // every widget that follows the model runs again or says it is out of date
    fillMenu(await get("/api/models", {}, { fresh: true }));  // a model just loaded has its file's name now
  } catch (error) {
    byId("model-select").value = before;
    modelError(id, error);
  } finally {
    loading = null;
    renderStatus();
  }
}

function fillMenu(choices) {
  names = choices.display_names || {};
  first = choices.models[0];
  const picker = byId("model-select");
  picker.replaceChildren(...choices.models.map((id) => new Option(names[id] || id, id)));
  picker.value = state.model || first;
}

// ---- start ---------------------------------------------------------------------------------------------------------
async function main() {
  register(common, "strings/common.js");
  register(reading, "strings/reading.js");
  for (const [name, section] of Object.entries(SECTIONS)) register(section.strings, `sections/${name}.strings.js`);
  document.querySelector("main").innerHTML = Object.values(SECTIONS).flatMap((s) => s.html ?? []).join("\n");
  Object.values(SECTIONS).forEach((s) => s.mount());
  revealLinks();
  document.querySelectorAll("input[type=range]").forEach((input) => {  // every slider shows its value
    showValue(input);
    input.addEventListener("input", () => showValue(input));
  });

  onLang((now) => {
    document.querySelectorAll("[data-lang]").forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.lang === now)));
    rememberLang(now);
    renderStatus();
    redrawAll();
  });
  setLang(startLang());
  performance.mark("forwardpass:text");  // every section's words on the page, before any data
  // the models and this one's shape, asked together (api.js hands the same answers on below)
  get("/api/models").catch(() => {});
  get("/api/model", state.model ? { model: state.model } : {}).catch(() => {});
  document.querySelectorAll("[data-lang]").forEach((b) => b.addEventListener("click", () => setLang(b.dataset.lang)));

  const prompt = byId("prompt");
  prompt.value = state.prompt;
  prompt.addEventListener("input", debounce(() => setPrompt(prompt.value), 350));

  fillMenu(await get("/api/models"));
  if (!state.model && lang() === "zh") state.model = await startModel(first).catch(() => null);  // a model that reads it
  let info;
  try {
    info = await get("/api/model", state.model ? { model: state.model } : {});
  } catch (error) {  // a ?model= this explorer does not have: said beside the menu, the first model shown instead
    modelError(state.model, error);
    state.model = null;
    info = await get("/api/model");
  }
  byId("model-select").value = state.model || first;
  showModel(info);
  setModel(state.model, info);  // the sections size their controls to it
  byId("model-select").addEventListener("change", (e) => chooseModel(e.target.value));
  on("model", () => refresh("model"));
  on("prompt", () => refresh("prompt"));
  on("toy", () => refresh("toy"));
  mountReader(chooseModel, first);
  await start();
  document.body.dataset.ready = "true";
}

main().catch((e) => {
  console.error(e);
  byId("status").textContent = e.message;
});
