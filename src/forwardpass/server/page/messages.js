// The conversation as shown: one <article> per message, the user's as typed, the assistant's rendered from
// Markdown each time more of it arrives, with notes under a message saying how it ended.

import { render } from "./markdown.js";

const list = document.getElementById("messages");

export function addMessage(role, text = "") {
  const article = document.createElement("article");
  article.className = `message ${role}`;
  const content = document.createElement("div");
  content.className = "content";
  article.append(content);
  list.append(article);
  setText(article, text);
  return article;
}

export function setText(article, text) {
  const following = list.scrollHeight - list.scrollTop - list.clientHeight < 40; // the reader is at the end
  const content = article.querySelector(".content");
  if (article.classList.contains("assistant")) content.innerHTML = render(text);
  else content.textContent = text;
  if (following) list.scrollTop = list.scrollHeight;
}

// kind "note": how a message ended ("Stopped."); "error": what went wrong, announced
export function addNote(article, text, kind = "note") {
  const note = document.createElement("p");
  note.className = kind;
  note.textContent = text;
  if (kind === "error") note.setAttribute("role", "alert");
  article.append(note);
  list.scrollTop = list.scrollHeight;
}

export function clearMessages() {
  list.replaceChildren();
}
