/** The exact strict JSON parser's lexical rules (RFC 8259 §§6–7, RFC 7493 §2.2) and messages. */
import { invalidFormat } from '../errors.js'
import { formatPath } from '../jcs.js'
import type { JsonValue } from '../types.js'
import { isIJsonSafeNumber } from './integers.js'
import { utf8Offset } from './utf8.js'

const NUMBER_LITERAL = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y
// `\"` `\\` `\/` `\b` `\f` `\n` `\r` `\t`, by the code of their second character.
const SHORT_ESCAPES = new Map(
  [...'"\\/bfnrt'].map((c, i) => [c.charCodeAt(0), '"\\/\b\f\n\r\t'[i]!]),
)

export function describeChar(c: number): string {
  if (Number.isNaN(c)) return 'end of input'
  if (c === 0x27) return `"'"`
  if (c >= 0x21 && c < 0x7f) return `'${String.fromCharCode(c)}'`
  return 'U+' + c.toString(16).toUpperCase().padStart(4, '0')
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
}

export class Scanner {
  protected pos = 0
  protected readonly path: (string | number)[] = []

  constructor(
    protected readonly text: string,
    private readonly fromBytes: boolean,
  ) {}

  protected fail(what: string, at = this.pos): never {
    const where = this.fromBytes ? `byte ${utf8Offset(this.text, at)}` : `offset ${at}`
    throw invalidFormat(`${what} (at ${where})`, formatPath(this.path))
  }

  protected skipWhitespace(): void {
    const t = this.text
    let i = this.pos
    for (;;) {
      const c = t.charCodeAt(i)
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break
      i++
    }
    this.pos = i
  }

  protected parseLiteral<T extends JsonValue>(word: string, value: T): T {
    if (!this.text.startsWith(word, this.pos)) this.fail('invalid literal, expected a value')
    this.pos += word.length
    return value
  }

  protected parseNumber(): number {
    const start = this.pos
    NUMBER_LITERAL.lastIndex = start
    if (!NUMBER_LITERAL.test(this.text)) this.fail('invalid number')
    const end = NUMBER_LITERAL.lastIndex
    const literal = this.text.slice(start, end)
    // Where a lenient parser would read on: a clearer message than "expected ','".
    const next = this.text.charCodeAt(end)
    if (next >= 0x30 && next <= 0x39) this.fail('leading zero in number', start)
    if (next === 0x2e || next === 0x65 || next === 0x45) this.fail('invalid number', start)
    const value = Number(literal)
    const shown = literal.length > 40 ? literal.slice(0, 37) + '...' : literal
    if (!Number.isFinite(value)) this.fail(`number ${shown} overflows a double`, start)
    if (!isIJsonSafeNumber(value)) {
      this.fail(`number ${shown} is an integer beyond ±(2^53−1), not interoperable`, start)
    }
    this.pos = end
    return value
  }

  protected parseString(): string {
    const t = this.text
    let i = this.pos + 1
    let chunk = i
    let out = ''
    for (;;) {
      const c = t.charCodeAt(i)
      if (c === 0x22) break
      if (c === 0x5c) {
        out += t.slice(chunk, i)
        i = this.parseEscape(i)
        out += this.escaped
        chunk = i
        continue
      }
      // Negated so that NaN (end of input) lands here too.
      if (!(c >= 0x20)) {
        this.fail(
          Number.isNaN(c)
            ? 'unterminated string'
            : `raw control character ${describeChar(c)} in string`,
          i,
        )
      }
      if (c >= 0xd800 && c <= 0xdfff) {
        const d = t.charCodeAt(i + 1)
        if (c > 0xdbff || !(d >= 0xdc00 && d <= 0xdfff)) this.fail('lone surrogate in string', i)
        i += 2
        continue
      }
      i++
    }
    this.pos = i + 1
    return out + t.slice(chunk, i)
  }

  private escaped = ''

  private parseEscape(i: number): number {
    const t = this.text
    const e = t.charCodeAt(i + 1)
    const short = SHORT_ESCAPES.get(e)
    if (short !== undefined) {
      this.escaped = short
      return i + 2
    }
    if (Number.isNaN(e)) return this.fail('unterminated string', i)
    if (e !== 0x75) return this.fail(`invalid escape \\${String.fromCharCode(e)} in string`, i)
    const u = this.hex4(i)
    if (u < 0xd800 || u > 0xdfff) {
      this.escaped = String.fromCharCode(u)
      return i + 6
    }
    // A high surrogate escape must be followed by a low one; anything else is a lone
    // surrogate that UTF-8 cannot carry.
    if (u <= 0xdbff && t.charCodeAt(i + 6) === 0x5c && t.charCodeAt(i + 7) === 0x75) {
      const v = this.hex4(i + 6)
      if (v >= 0xdc00 && v <= 0xdfff) {
        this.escaped = String.fromCharCode(u, v)
        return i + 12
      }
    }
    return this.fail(`lone surrogate escape ${t.slice(i, i + 6)} in string`, i)
  }

  private hex4(i: number): number {
    const t = this.text
    for (let k = i + 2; k < i + 6; k++) {
      if (!isHex(t.charCodeAt(k))) this.fail('invalid \\u escape, expected four hex digits', i)
    }
    return parseInt(t.slice(i + 2, i + 6), 16)
  }
}
