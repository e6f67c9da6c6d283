/** A tiny typed event emitter: the editor's state changes reach the panels through it. */

export class Emitter<Events extends Record<string, unknown>> {
  private handlers: { [K in keyof Events]?: Array<(value: Events[K]) => void> } = {};

  on<K extends keyof Events>(name: K, handler: (value: Events[K]) => void): () => void {
    (this.handlers[name] ??= []).push(handler);
    return () => {
      this.handlers[name] = this.handlers[name]?.filter((h) => h !== handler);
    };
  }

  emit<K extends keyof Events>(name: K, value: Events[K]): void {
    for (const handler of this.handlers[name] ?? []) {
      try {
        handler(value);
      } catch (err) {
        console.warn(`handler of "${String(name)}" failed`, err);
      }
    }
  }
}
