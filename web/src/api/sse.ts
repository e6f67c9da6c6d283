/**
 * Server-Sent Events parsing, for streams read with fetch() (EventSource cannot send the
 * Authorization header). `SseParser` is the pure line protocol of the HTML spec; `readSse`
 * turns a byte stream into events.
 */

export interface SseEvent {
  /** The `event:` field, "message" when absent. */
  event: string;
  /** The `data:` lines joined with "\n". */
  data: string;
  /** The last `id:` seen so far in the stream ("" when none). */
  id: string;
  /** A `retry:` value in ms on this event, if it had one. */
  retry?: number;
}

/** Feeds text chunks in, gets whole events out; keeps partial lines between chunks. */
export class SseParser {
  private buffer = "";
  private skipLf = false;
  private started = false;
  private data: string[] = [];
  private eventType = "";
  private lastId = "";
  private retry: number | undefined;

  /** Parse a chunk; returns the events it completed. */
  feed(chunk: string): SseEvent[] {
    if (!this.started && chunk.length > 0) {
      this.started = true;
      if (chunk.charCodeAt(0) === 0xfeff) chunk = chunk.slice(1);
    }
    const events: SseEvent[] = [];
    let text = this.buffer + chunk;
    this.buffer = "";
    if (this.skipLf && text.startsWith("\n")) text = text.slice(1);
    this.skipLf = false;
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (c !== "\n" && c !== "\r") continue;
      this.line(text.slice(start, i), events);
      if (c === "\r") {
        if (i + 1 < text.length) {
          if (text[i + 1] === "\n") i++;
        } else {
          this.skipLf = true; // a "\r\n" may be split across chunks
        }
      }
      start = i + 1;
    }
    this.buffer = text.slice(start);
    return events;
  }

  /** End of stream: a final unterminated event is dropped, as the spec says. */
  end(): SseEvent[] {
    this.buffer = "";
    this.data = [];
    this.eventType = "";
    return [];
  }

  private line(line: string, out: SseEvent[]): void {
    if (line === "") {
      this.dispatch(out);
      return;
    }
    if (line.startsWith(":")) return; // comment / keep-alive
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "event":
        this.eventType = value;
        break;
      case "data":
        this.data.push(value);
        break;
      case "id":
        if (!value.includes("\0")) this.lastId = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.retry = Number(value);
        break;
      default:
        break; // unknown fields are ignored
    }
  }

  private dispatch(out: SseEvent[]): void {
    if (this.data.length > 0) {
      const event: SseEvent = {
        event: this.eventType || "message",
        data: this.data.join("\n"),
        id: this.lastId,
      };
      if (this.retry !== undefined) event.retry = this.retry;
      out.push(event);
    }
    this.data = [];
    this.eventType = "";
    this.retry = undefined;
  }
}

/** The events of a byte stream (a fetch Response body), in order, until it ends. */
export async function* readSse(stream: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const reader = stream.getReader();
  const decoder = new TextDecoder("utf-8");
  const parser = new SseParser();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      yield* parser.feed(decoder.decode(value, { stream: true }));
    }
    yield* parser.feed(decoder.decode());
    parser.end();
  } finally {
    reader.releaseLock();
  }
}
