/**
 * The inbox's Content-Type rule (PROFILE §6): `application/json`, optionally with
 * `charset=utf-8`. Type, parameter name and charset value compare case-insensitively; optional
 * whitespace (space, tab) may surround the `;`, and the charset value may be a quoted string
 * (RFC 9110 §5.6.4, quoted-pairs included). Anything else, including no header, is refused.
 */

const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+"
// qdtext: HTAB, SP, 0x21, 0x23–0x5B, 0x5D–0x7E (obs-text is not needed for "utf-8").
const QUOTED = '"((?:[\\t !#-\\[\\]-~]|\\\\[\\t -~])*)"'
const JSON_TYPE = new RegExp(
  `^[ \\t]*application/json[ \\t]*(?:;[ \\t]*charset=(?:(${TOKEN})|${QUOTED})[ \\t]*)?$`,
  'i',
)

/**
 * True when `value` (a Content-Type header value, or `null` when absent) is one the inbox
 * accepts.
 *
 * @example
 * isJsonContentType('Application/JSON ; Charset="UTF-8"') // true
 * isJsonContentType('application/json; charset=latin1')  // false
 */
export function isJsonContentType(value: string | null | undefined): boolean {
  if (!value) return false
  const m = JSON_TYPE.exec(value)
  if (!m) return false
  const charset = m[1] ?? (m[2] === undefined ? undefined : m[2].replace(/\\(.)/g, '$1'))
  return charset === undefined || charset.toLowerCase() === 'utf-8'
}
