/** A child of `h`: text (always a text node, never markup), an element, or nothing. */
export type Child = Node | string | null | undefined | false;

/**
 * An element with attributes and children. Whatever a user or Discord wrote goes in as text; a `style`
 * attribute never does (a strict page's CSP would refuse it): styles are set through CSSOM properties.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | number | null | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value !== null && value !== undefined) node.setAttribute(name, String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}
