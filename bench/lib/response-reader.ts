/** The end of an HTTP/1.1 head. */
const HEAD_END = Buffer.from('\r\n\r\n');

/**
 * Follows HTTP/1.1 responses with a Content-Length on one keep-alive connection, whatever the chunks:
 * tells of each response once its last byte is read, with its status, keeping none of its body. A client
 * that reads a large body slowly needs to know no more to ask again.
 */
export class ResponseReader {
  private head: Buffer | null = Buffer.alloc(0);
  private status = 0;
  private remaining = 0;
  private bodyBytes = 0;

  constructor(private readonly onResponse: (status: number, bodyBytes: number) => void) {}

  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.head === null) {
        const take = Math.min(this.remaining, chunk.length - at);
        this.remaining -= take;
        at += take;
        if (this.remaining === 0) this.ended();
        continue;
      }
      const head = Buffer.concat([this.head, chunk.subarray(at)]);
      const end = head.indexOf(HEAD_END);
      if (end < 0) {
        this.head = head;
        return;
      }
      at += end + HEAD_END.length - this.head.length;
      const text = head.toString('latin1', 0, end);
      this.status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0);
      this.remaining = Number(/\r\ncontent-length:\s*(\d+)/i.exec(text)?.[1] ?? 0);
      this.head = null;
      this.bodyBytes = this.remaining;
      if (this.remaining === 0) this.ended();
    }
  }

  private ended(): void {
    this.head = Buffer.alloc(0);
    this.onResponse(this.status, this.bodyBytes);
  }
}
