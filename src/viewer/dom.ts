/** A child of `element`: text (always a text node, never markup), an element, or nothing. */
export type Child = Node | string | null | undefined;

/** An element with its attributes and children. Whatever a user or Discord wrote goes in as text. */
export function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

/** The page's element `id`, of the kind the script needs: the server wrote the page, so one missing is a bug. */
export function byId<T extends HTMLElement>(id: string, kind: abstract new () => T): T {
  const node = document.getElementById(id);
  if (!(node instanceof kind)) throw new Error(`the page has no ${kind.name} #${id}`);
  return node;
}
