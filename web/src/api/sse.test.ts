// Unit tests of the SSE parser: fields, comments, line endings, chunk boundaries, streams.
import { describe, expect, it } from "vitest";
import { readSse, SseParser } from "./sse";

function parseAll(chunks: string[]) {
  const parser = new SseParser();
  const events = chunks.flatMap((c) => parser.feed(c));
  parser.end();
  return events;
}

describe("SseParser", () => {
  it("parses named events with JSON data", () => {
    const events = parseAll(['event: progress\ndata: {"a":1}\n\nevent: done\ndata: {"a":2}\n\n']);
    expect(events).toEqual([
      { event: "progress", data: '{"a":1}', id: "" },
      { event: "done", data: '{"a":2}', id: "" },
    ]);
  });

  it("defaults the type to message and joins data lines", () => {
    expect(parseAll(["data: one\ndata: two\ndata\n\n"])).toEqual([
      { event: "message", data: "one\ntwo\n", id: "" },
    ]);
  });

  it("ignores comments, unknown fields and events without data", () => {
    expect(parseAll([": keep-alive\n\nfoo: bar\nevent: x\n\ndata:x\n\n"])).toEqual([
      { event: "message", data: "x", id: "" },
    ]);
  });

  it("strips only one leading space", () => {
    expect(parseAll(["data:  two spaces\n\n"])[0].data).toBe(" two spaces");
  });

  it("handles CRLF and CR line endings, split anywhere", () => {
    const text = "event: progress\r\ndata: 1\r\n\r\nevent: done\rdata: 2\r\r";
    for (let cut = 0; cut <= text.length; cut++) {
      const events = parseAll([text.slice(0, cut), text.slice(cut)]);
      expect(events.map((e) => [e.event, e.data])).toEqual([
        ["progress", "1"],
        ["done", "2"],
      ]);
    }
  });

  it("keeps partial lines across many one-character chunks", () => {
    const text = 'event: done\ndata: {"status":"done"}\n\n';
    expect(parseAll(text.split(""))).toEqual([{ event: "done", data: '{"status":"done"}', id: "" }]);
  });

  it("drops an unterminated final event", () => {
    expect(parseAll(["data: complete\n\ndata: partial"])).toHaveLength(1);
  });

  it("tracks id and retry", () => {
    const events = parseAll(["id: 7\nretry: 1500\ndata: a\n\ndata: b\n\nid: bad\0\ndata: c\n\n"]);
    expect(events.map((e) => [e.id, e.retry])).toEqual([
      ["7", 1500],
      ["7", undefined],
      ["7", undefined],
    ]);
  });

  it("skips a leading byte-order mark", () => {
    expect(parseAll(["\ufeffdata: x\n\n"])[0].data).toBe("x");
  });
});

describe("readSse", () => {
  it("decodes a byte stream with multi-byte characters split across chunks", async () => {
    const bytes = new TextEncoder().encode("event: progress\ndata: «é»\n\nevent: done\ndata: ok\n\n");
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 3) controller.enqueue(bytes.slice(i, i + 3));
        controller.close();
      },
    });
    const seen = [];
    for await (const event of readSse(stream)) seen.push([event.event, event.data]);
    expect(seen).toEqual([
      ["progress", "«é»"],
      ["done", "ok"],
    ]);
  });
});
