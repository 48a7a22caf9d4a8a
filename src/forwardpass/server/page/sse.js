// Server-sent events read from a fetch response's body as they arrive: {event, data} for each event (event is
// "message" unless the server names it; data is its data lines joined).

const BOUNDARY = /\r?\n\r?\n/;

export async function* events(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let m;
      while ((m = buffer.match(BOUNDARY))) {
        const block = buffer.slice(0, m.index);
        buffer = buffer.slice(m.index + m[0].length);
        const event = parse(block);
        if (event) yield event;
      }
    }
    const last = parse(buffer); // a final event with no blank line after it
    if (last) yield last;
  } finally {
    reader.cancel().catch(() => {}); // the consumer stopped early (or the stream failed): let the connection go
  }
}

function parse(block) {
  let event = "message";
  const data = [];
  for (const line of block.split(/\r?\n/)) {
    if (!line || line.startsWith(":")) continue; // a comment (keep-alive)
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  return data.length ? { event, data: data.join("\n") } : null;
}
