// Requests to this server's API: the API key the user gave (kept in localStorage) sent as a bearer token, and every
// answer that is not a success turned into an APIError carrying the server's own message.

const STORED = "forwardpass.apiKey";
let unstored = ""; // the key, where localStorage is turned off: it lasts until the page is left

export class APIError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export function apiKey() {
  try {
    return localStorage.getItem(STORED) || unstored;
  } catch {
    return unstored;
  }
}

export function setApiKey(key) {
  unstored = key;
  try {
    localStorage.setItem(STORED, key);
  } catch {
    // storage turned off: kept in `unstored` only
  }
}

// GET `path`, or POST `body` as JSON; resolves to the response once it is a success
export async function call(path, { body, signal } = {}) {
  const headers = {};
  const key = apiKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  const init = { method: "GET", headers, signal };
  if (body !== undefined) {
    Object.assign(init, { method: "POST", body: JSON.stringify(body) });
    headers["Content-Type"] = "application/json";
  }
  const response = await fetch(path, init);
  if (!response.ok) throw new APIError(response.status, await errorMessage(response));
  return response;
}

async function errorMessage(response) {
  const text = await response.text().catch(() => "");
  try {
    const { error } = JSON.parse(text);
    if (error?.message) return error.message;
  } catch {
    // not the API's JSON error: the text itself below
  }
  return `${response.status} ${response.statusText}${text ? `: ${text.slice(0, 300)}` : ""}`;
}
