/**
 * Undo/redo among visited versions (a browser-like back/forward list), and the version tree
 * laid out as an indented list for the History panel.
 */

export class NavHistory {
  private stack: string[] = [];
  private index = -1;

  constructor(private readonly limit = 500) {}

  /** The version shown now, or null before the first visit. */
  get current(): string | null {
    return this.index >= 0 ? this.stack[this.index] : null;
  }

  get canUndo(): boolean {
    return this.index > 0;
  }

  get canRedo(): boolean {
    return this.index >= 0 && this.index < this.stack.length - 1;
  }

  /** Go to a version: forward history is dropped; visiting the current one changes nothing. */
  visit(id: string): void {
    if (this.current === id) return;
    this.stack = this.stack.slice(0, this.index + 1);
    this.stack.push(id);
    if (this.stack.length > this.limit) this.stack.shift();
    this.index = this.stack.length - 1;
  }

  /** Back one step; the version to show, or null when there is nothing to undo. */
  undo(): string | null {
    if (!this.canUndo) return null;
    this.index -= 1;
    return this.current;
  }

  /** Forward one step; the version to show, or null when there is nothing to redo. */
  redo(): string | null {
    if (!this.canRedo) return null;
    this.index += 1;
    return this.current;
  }

  /** Forget everything (a new session). */
  reset(): void {
    this.stack = [];
    this.index = -1;
  }
}

export interface TreeRow {
  id: string;
  depth: number;
}

/**
 * The tree (children by parent id, roots under "root") depth-first, children in the given
 * order; versions the tree does not reach (none, normally) are appended at depth 0.
 */
export function flattenTree(children: Record<string, string[]>, allIds: string[] = []): TreeRow[] {
  const rows: TreeRow[] = [];
  const seen = new Set<string>();
  const walk = (id: string, depth: number) => {
    if (seen.has(id)) return;
    seen.add(id);
    rows.push({ id, depth });
    for (const child of children[id] ?? []) walk(child, depth + 1);
  };
  for (const root of children.root ?? []) walk(root, 0);
  for (const id of allIds) walk(id, 0);
  return rows;
}
