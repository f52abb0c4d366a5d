/** The few DOM helpers of the demo page. Text is only ever set as text, never parsed as HTML. */

export type Attrs = Record<string, string>

/** `<tag attrs…>children…</tag>`; strings become text nodes. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Array<Node | string>
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v)
  node.append(...children)
  return node
}

/** An agent id short enough for a label. */
export const short = (id: string) => (id.length > 28 ? `${id.slice(0, 20)}…${id.slice(-6)}` : id)
