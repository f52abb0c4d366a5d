/**
 * Text from peers, safe to print on one terminal line: C0/C1 controls (escape sequences, line
 * breaks) and bidirectional overrides escaped as `\uXXXX` (`\n`, `\r`, `\t` as themselves), so
 * a message, an agent id or a peer's error message cannot retitle, clear or rewrite a terminal.
 */
export function safeText(text: string): string {
  return text.replace(
    // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
    /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g,
    (c) =>
      ({ '\n': '\\n', '\r': '\\r', '\t': '\\t' })[c] ??
      `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  )
}
