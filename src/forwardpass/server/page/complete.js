// One chat completion streamed from POST /v1/chat/completions: each piece of the reply's text handed to onText as it
// arrives; resolves to the finish reason once the server sends [DONE]. A failure the server reports in the stream
// (an `error` event, or a chunk carrying `error`) or a stream that ends without [DONE] rejects with a StreamError;
// the text handed over so far stays the reply's.

import { call } from "./api.js";
import { events } from "./sse.js";

export class StreamError extends Error {}

export async function streamChat(request, onText, signal) {
  const response = await call("/v1/chat/completions", { body: { ...request, stream: true }, signal });
  let finish = null;
  for await (const { event, data } of events(response.body)) {
    if (data === "[DONE]") return finish;
    let chunk;
    try {
      chunk = JSON.parse(data);
    } catch {
      throw new StreamError(`the server sent an event that is not JSON: ${data.slice(0, 200)}`);
    }
    if (event === "error" || chunk.error) throw new StreamError(chunk.error?.message || data);
    const choice = chunk.choices?.[0];
    if (choice?.delta?.content) onText(choice.delta.content);
    if (choice?.finish_reason) finish = choice.finish_reason;
  }
  signal?.throwIfAborted();
  throw new StreamError("the reply's stream ended before the server finished it");
}
