/** A few DOM helpers: build elements tersely, toggle buttons, clear children. */

type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;
type Child = Node | string | null | undefined | false;

/** Create an element: `on*` attributes become listeners, booleans set/omit the attribute. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2).toLowerCase(), value as EventListener);
    } else if (name === "className") {
      el.className = String(value);
    } else if (name === "value" && "value" in el) {
      (el as unknown as { value: string }).value = String(value);
    } else {
      el.setAttribute(name, value === true ? "" : String(value));
    }
  }
  for (const child of children) if (child !== null && child !== undefined && child !== false) el.append(child);
  return el;
}

/** Remove every child. */
export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

/** A toggle button: aria-pressed reflects its state, `onToggle` gets the new state. */
export function toggleButton(label: string, pressed: boolean, onToggle: (on: boolean) => void, title = ""): HTMLButtonElement {
  const button = h("button", { type: "button", "aria-pressed": String(pressed), title: title || null }, label);
  button.addEventListener("click", () => {
    const on = button.getAttribute("aria-pressed") !== "true";
    button.setAttribute("aria-pressed", String(on));
    onToggle(on);
  });
  return button;
}

/** Set a toggle button's state without firing it. */
export function setPressed(button: HTMLButtonElement, on: boolean): void {
  button.setAttribute("aria-pressed", String(on));
}
