// The explorer's JSON endpoints. Every request names the page's model; the same request asked twice (two widgets
// reading one computation, a redraw) is answered once, here and by the explorer (explorer/answers.py). A failure is
// an ApiError whose code names the page's own sentence for it (strings/common.js: error.<code>), with the server's
// English message beside it.

import { state } from "./state.js";

export class ApiError extends Error {
  constructor(message, code, params = {}) {
    super(message);
    this.code = code;
    this.params = params;
  }
}

const answers = new Map();  // request → its answer (a promise); the latest 200 kept
let inFlight = 0;
const busyListeners = new Set();
/** fn(count of requests in flight), called whenever it changes */
export const onBusy = (fn) => busyListeners.add(fn);
const busy = (d) => { inFlight += d; busyListeners.forEach((fn) => fn(inFlight)); };
/** count `promise` as a request in flight until it settles (a run of several requests, one after another) */
export async function working(promise) {
  busy(+1);
  try { return await promise; } finally { busy(-1); }
}

/** GET path?query; `model` adds the page's model (only the endpoints that run one take it); `fresh` asks again */
export function get(path, query = {}, { model = false, fresh = false } = {}) {
  const params = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]));
  if (model && state.model) params.set("model", state.model);
  const qs = params.toString(), send = () => request(qs ? `${path}?${qs}` : path);
  return remembered(`GET ${path}?${qs}`, send, fresh);
}

/** POST a JSON body, with the page's model; `fresh` asks again even if it was answered, here or by the explorer (a
 * new measurement) */
export function post(path, body, { fresh = false } = {}) {
  const full = { ...body, model: state.model };
  const send = () => request(fresh ? `${path}?fresh=1` : path, { method: "POST",
    headers: { "content-type": "application/json" }, body: JSON.stringify(full) });
  return remembered(`POST ${path} ${JSON.stringify(full)}`, send, fresh);
}

/** the answer remembered under `key`, or send()'s; `fresh`: send() again, its answer replacing the remembered one
 * (here as on the server) */
function remembered(key, send, fresh = false) {
  if (fresh || !answers.has(key)) {
    const answer = send();
    answer.catch(() => { if (answers.get(key) === answer) answers.delete(key); });  // a failure is asked again
    answers.delete(key);  // re-inserted as the newest
    answers.set(key, answer);
    if (answers.size > 200) answers.delete(answers.keys().next().value);
  }
  return answers.get(key);
}

async function request(path, init) {
  busy(+1);
  try {
    let response;
    try {
      response = await fetch(path, init);
    } catch (e) {
      throw new ApiError(e.message, "network");
    }
    let data;
    try {
      data = await response.json();
    } catch {
      throw new ApiError(response.statusText, "http", { status: response.status });
    }
    if (!response.ok) throw new ApiError(data.error || response.statusText, data.code || "http",
      data.code ? data.params || {} : { status: response.status });
    return data;
  } finally {
    busy(-1);
  }
}
