// The chat page: the chat models to pick from, the settings, and the conversation, sent whole with each new message
// and answered as a stream that the stop button ends. The state the page is in is body[data-state] (index.html).

import { APIError, apiKey, call, setApiKey } from "./api.js";
import { streamChat } from "./complete.js";
import { addMessage, addNote, clearMessages, setText } from "./messages.js";

const $ = (id) => document.getElementById(id);
const input = $("input");
const history = []; // {role, content} of each turn so far; the system prompt is put first when sending
let running = null; // the AbortController of the reply arriving
let conversation = 0; // counts "new chat"s: a reply still arriving from an earlier conversation is dropped

function setState(state) {
  document.body.dataset.state = state;
  $("send").disabled = state !== "idle";
}

function notice(text) {
  $("notice").textContent = text;
  $("notice").hidden = !text;
}

// /v1/models may list an embedding model beside the chat models: it takes no messages
const forChat = (model) => ![model.kind, model.type, model.task].some((v) => typeof v === "string" && /embed/i.test(v));

// a model the server could not load stays in the list, marked, with the reason on hover (a request for it says why)
function modelOption(model) {
  if (model.status !== "failed") return new Option(model.id, model.id);
  const option = new Option(`${model.id} (could not be loaded)`, model.id);
  option.title = model.error ?? "";
  return option;
}

async function loadModels() {
  setState("starting");
  try {
    const { data = [] } = await (await call("/v1/models")).json();
    const models = data.filter(forChat);
    const select = $("model");
    const chosen = select.value;
    select.replaceChildren(...models.map(modelOption));
    if (models.some((m) => m.id === chosen)) select.value = chosen;
    notice(models.length ? "" : "This server lists no chat model.");
  } catch (e) {
    if (e instanceof APIError && e.status === 401) return askKey();
    notice(`Could not list the server's models: ${e.message}`);
  }
  setState("idle");
}

function askKey() {
  $("key-error").textContent = apiKey() ? "The server refused the key it was given." : "";
  $("key-form").hidden = false;
  setState("needs-key");
  $("key").focus();
}

$("key-form").addEventListener("submit", (e) => {
  e.preventDefault();
  setApiKey($("key").value.trim());
  $("key").value = "";
  $("key-form").hidden = true;
  loadModels();
});

// the sampling fields filled in; an empty one is left out, so the server's default applies
function settings() {
  const chosen = {};
  for (const name of ["temperature", "top_p", "max_tokens"]) {
    const field = $(name);
    if (field.validity.badInput) throw new Error(`${field.labels[0].textContent.trim()} is not a number.`);
    if (field.value !== "") chosen[name] = Number(field.value);
  }
  return chosen;
}

function request() {
  const system = $("system").value.trim();
  const messages = system ? [{ role: "system", content: system }, ...history] : [...history];
  const model = $("model").value;
  return { ...(model ? { model } : {}), messages, ...settings() };
}

async function send() {
  const text = input.value;
  if (!text.trim() || document.body.dataset.state !== "idle") return;
  try {
    settings();
  } catch (e) {
    return notice(e.message);
  }
  notice("");
  input.value = "";
  history.push({ role: "user", content: text });
  const asked = addMessage("user", text);
  const answer = addMessage("assistant");
  const controller = (running = new AbortController());
  const turn = conversation;
  setState("streaming");
  let reply = "";
  try {
    const finish = await streamChat(request(), (piece) => setText(answer, (reply += piece)), controller.signal);
    if (finish === "length") addNote(answer, "Reached the token limit.");
  } catch (e) {
    if (turn !== conversation) return;
    if (controller.signal.aborted) addNote(answer, "Stopped.");
    else if (e instanceof APIError && e.status === 401) {
      addNote(answer, e.message, "error");
      askKey();
    } else addNote(answer, reply ? `The reply ended early: ${e.message}` : e.message, "error");
  }
  if (turn !== conversation) return;
  running = null;
  if (reply) history.push({ role: "assistant", content: reply });
  else unanswered(asked, text);
  if (document.body.dataset.state === "streaming") setState("idle");
}

// a message with no reply leaves the conversation, its text back in the box to send again
function unanswered(asked, text) {
  history.pop();
  asked.classList.add("unanswered");
  if (!input.value) input.value = text;
}

$("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  send();
});

input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send();
  }
});

$("stop").addEventListener("click", () => running?.abort());

$("new-chat").addEventListener("click", () => {
  conversation += 1;
  running?.abort();
  running = null;
  history.length = 0;
  clearMessages();
  notice("");
  if (document.body.dataset.state === "streaming") setState("idle");
  input.focus();
});

loadModels();
input.focus();
