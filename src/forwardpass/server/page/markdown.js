// Markdown to HTML for model output, safe by construction: the whole text is HTML-escaped first, and the only markup
// added is a fixed set of tags (links only to http and https addresses). Fenced code blocks, headings, bullet and
// numbered lists, rules and paragraphs; inside them inline code, links, bold and italic. A fence not yet closed
// (a reply still arriving) runs to the end.

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
export const escapeHtml = (text) => text.replace(/[&<>"']/g, (c) => ESCAPES[c]);

const FENCE = /^( {0,3})```\s*([\w+#.-]*)/;
const FENCE_END = /^ {0,3}```\s*$/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/;
const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const BULLET = /^\s{0,3}[-*+]\s+(.*)$/;
const NUMBERED = /^\s{0,3}(\d{1,9})[.)]\s+(.*)$/;
const INDENTED = /^(?: {2,}|\t)\S/;

export function render(markdown) {
  const lines = escapeHtml(markdown).split(/\r?\n/);
  const out = [];
  let paragraph = [];
  let list = null; // {tag, start, items: [[line, …], …]}

  const flush = () => {
    if (paragraph.length) out.push(`<p>${paragraph.map(inline).join("<br>")}</p>`);
    if (list) {
      const start = list.start > 1 ? ` start="${list.start}"` : "";
      const items = list.items.map((item) => `<li>${item.map(inline).join("<br>")}</li>`).join("");
      out.push(`<${list.tag}${start}>${items}</${list.tag}>`);
    }
    paragraph = [];
    list = null;
  };
  const item = (tag, start, text) => {
    if (list?.tag !== tag) {
      flush();
      list = { tag, start, items: [] };
    }
    list.items.push([text]);
  };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    let m;
    if ((m = line.match(FENCE))) {
      flush();
      const indent = new RegExp(`^ {0,${m[1].length}}`);
      const code = [];
      while (++i < lines.length && !FENCE_END.test(lines[i])) code.push(lines[i].replace(indent, ""));
      const lang = m[2] ? ` class="language-${m[2]}"` : "";
      out.push(`<pre><code${lang}>${code.join("\n")}</code></pre>`);
    } else if (!line.trim()) {
      flush();
    } else if ((m = line.match(HEADING))) {
      flush();
      out.push(`<h${m[1].length}>${inline(m[2])}</h${m[1].length}>`);
    } else if (RULE.test(line)) {
      flush();
      out.push("<hr>");
    } else if ((m = line.match(BULLET))) {
      item("ul", 1, m[1]);
    } else if ((m = line.match(NUMBERED))) {
      item("ol", Number(m[1]), m[2]);
    } else if (list && INDENTED.test(line)) {
      list.items.at(-1).push(line.trim()); // a list item's next line
    } else {
      if (list) flush();
      paragraph.push(line);
    }
  }
  flush();
  return out.join("\n");
}

// inline code and links are taken first (nothing inside code is touched); emphasis in the text around them
const CODE_OR_LINK = /`([^`\n]+)`|\[([^\]\n]+)\]\(([^\s()]+)\)/g;

function inline(text) {
  let html = "";
  let at = 0;
  for (const m of text.matchAll(CODE_OR_LINK)) {
    html += emphasis(text.slice(at, m.index));
    if (m[1] !== undefined) html += `<code>${m[1]}</code>`;
    else if (/^https?:\/\//i.test(m[3])) {
      html += `<a href="${m[3]}" target="_blank" rel="noopener noreferrer">${emphasis(m[2])}</a>`;
    } else html += m[0]; // any other scheme (javascript:, data:) stays text
    at = m.index + m[0].length;
  }
  return html + emphasis(text.slice(at));
}

function emphasis(text) {
  return text
    .replace(/\*\*(?=\S)(.*?\S)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|\W)__(?=\S)(.*?\S)__(?!\w)/g, "$1<strong>$2</strong>")
    .replace(/(^|[^*\w])\*(?=[^\s*])([^*]*?[^\s*])\*(?![*\w])/g, "$1<em>$2</em>")
    .replace(/(^|[^_\w])_(?=[^\s_])([^_]*?[^\s_])_(?![_\w])/g, "$1<em>$2</em>");
}
