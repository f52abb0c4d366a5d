// The exact strict JSON parser (PROFILE §1): recursive descent over the RFC 8259 grammar and
// the lexical rules of RFC 8259 §§6–7 and RFC 7493 §2.2, refusing duplicate names, a non-object
// top level and deep nesting, and saying where.
import { invalidFormat } from '../errors.js'
import { formatPath } from '../jcs.js'
import { defineMember, type JsonObject, type JsonValue } from '../types.js'
import {
  isIJsonSafeNumber,
  isPlainInteger,
  markNonInteger,
  matchesIntegerMember,
} from './integers.js'
import type { PreparedStrictJson } from './prepare.js'
import { utf8Offset } from './utf8.js'

const NUMBER_LITERAL = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y
// `\"` `\\` `\/` `\b` `\f` `\n` `\r` `\t`, by the code of their second character.
const SHORT_ESCAPES = new Map(
  [...'"\\/bfnrt'].map((c, i) => [c.charCodeAt(0), '"\\/\b\f\n\r\t'[i]!]),
)

const HEX4 = /^[0-9A-Fa-f]{4}$/

function describeChar(c: number): string {
  if (Number.isNaN(c)) return 'end of input'
  if (c === 0x27) return `"'"`
  if (c >= 0x21 && c < 0x7f) return `'${String.fromCharCode(c)}'`
  return 'U+' + c.toString(16).toUpperCase().padStart(4, '0')
}

class Parser {
  private pos = 0
  private readonly path: (string | number)[] = []

  constructor(
    private readonly rules: PreparedStrictJson,
    private readonly text = rules.text,
  ) {}

  parseDocument(): JsonObject {
    const t = this.text
    if (t.charCodeAt(0) === 0xfeff) this.fail('byte order mark not allowed', 0)
    this.skipWhitespace()
    const c = t.charCodeAt(this.pos)
    if (c !== 0x7b) {
      let found = describeChar(c)
      if (c === 0x5b) found = 'an array'
      else if (c === 0x22) found = 'a string'
      else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) found = 'a number'
      else if (c === 0x74 || c === 0x66 || c === 0x6e) found = 'a literal'
      else if (Number.isNaN(c)) found = 'no value'
      this.fail(`top level must be an object, found ${found}`)
    }
    const value = this.parseObject(1)
    this.skipWhitespace()
    if (this.pos < t.length)
      this.fail(`unexpected ${describeChar(t.charCodeAt(this.pos))} after the top-level object`)
    return value
  }

  private parseValue(depth: number): JsonValue {
    const c = this.text.charCodeAt(this.pos)
    switch (c) {
      case 0x7b:
        return this.parseObject(depth + 1)
      case 0x5b:
        return this.parseArray(depth + 1)
      case 0x22:
        return this.parseString()
      case 0x74:
        return this.parseLiteral('true', true)
      case 0x66:
        return this.parseLiteral('false', false)
      case 0x6e:
        return this.parseLiteral('null', null)
      default:
        if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return this.parseNumber()
        if (Number.isNaN(c)) this.fail('unexpected end of input, expected a value')
        return this.fail(`unexpected ${describeChar(c)}, expected a value`)
    }
  }

  // Past the opening bracket: true when the container is empty (its closing one consumed).
  private open(depth: number, close: number): boolean {
    const { maxDepth } = this.rules
    if (depth > maxDepth) this.fail(`nesting deeper than ${maxDepth} levels`)
    this.pos++
    this.skipWhitespace()
    if (this.text.charCodeAt(this.pos) !== close) return false
    this.pos++
    return true
  }

  // After a member or an element: true at the closing bracket, false past a ','.
  private closes(close: number, what: string): boolean {
    this.skipWhitespace()
    const c = this.text.charCodeAt(this.pos)
    this.pos++
    if (c === close) return true
    if (c !== 0x2c) {
      this.pos--
      this.fail(
        Number.isNaN(c)
          ? `unterminated ${what}`
          : `unexpected ${describeChar(c)}, expected ',' or '${String.fromCharCode(close)}'`,
      )
    }
    this.skipWhitespace()
    return false
  }

  private parseObject(depth: number): JsonObject {
    const t = this.text
    const out: JsonObject = {}
    if (this.open(depth, 0x7d)) return out
    do {
      const at = this.pos
      const c = t.charCodeAt(at)
      if (c !== 0x22) {
        this.fail(
          Number.isNaN(c)
            ? 'unterminated object'
            : `unexpected ${describeChar(c)}, expected a member name`,
        )
      }
      const key = this.parseString()
      this.path.push(key)
      if (Object.hasOwn(out, key)) this.fail(`duplicate member name ${JSON.stringify(key)}`, at)
      this.skipWhitespace()
      const colon = t.charCodeAt(this.pos)
      if (colon !== 0x3a) this.fail(`unexpected ${describeChar(colon)}, expected ':'`)
      this.pos++
      this.skipWhitespace()
      const valueAt = this.pos
      const value = this.parseValue(depth)
      if (typeof value === 'number') this.checkInteger(out, key, valueAt)
      if (key === '__proto__') defineMember(out, key, value)
      else out[key] = value
      this.path.pop()
    } while (!this.closes(0x7d, 'object'))
    return out
  }

  private checkInteger(holder: JsonObject, key: string, start: number): void {
    const integers = this.rules.integers
    if (integers === undefined || isPlainInteger(this.text, start, this.pos)) return
    if (!matchesIntegerMember(integers, this.path)) return
    let literal = this.text.slice(start, this.pos)
    if (literal.length > 40) literal = literal.slice(0, 37) + '...'
    if (this.rules.onNonInteger === 'mark') markNonInteger(holder, key, literal)
    else this.fail(`${literal} is not an integer written without fraction or exponent`, start)
  }

  private parseArray(depth: number): JsonValue[] {
    const out: JsonValue[] = []
    if (this.open(depth, 0x5d)) return out
    do {
      this.path.push(out.length)
      out.push(this.parseValue(depth))
      this.path.pop()
    } while (!this.closes(0x5d, 'array'))
    return out
  }

  private fail(what: string, at = this.pos): never {
    const where = this.rules.fromBytes ? `byte ${utf8Offset(this.text, at)}` : `offset ${at}`
    throw invalidFormat(`${what} (at ${where})`, formatPath(this.path))
  }

  private skipWhitespace(): void {
    const t = this.text
    let i = this.pos
    for (;;) {
      const c = t.charCodeAt(i)
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break
      i++
    }
    this.pos = i
  }

  private parseLiteral<T extends JsonValue>(word: string, value: T): T {
    if (!this.text.startsWith(word, this.pos)) this.fail('invalid literal, expected a value')
    this.pos += word.length
    return value
  }

  private parseNumber(): number {
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

  private parseString(): string {
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
    const hex = this.text.slice(i + 2, i + 6)
    if (!HEX4.test(hex)) this.fail('invalid \\u escape, expected four hex digits', i)
    return parseInt(hex, 16)
  }
}

/** The exact parser's verdict on prepared input. */
export function exactParse(p: PreparedStrictJson): JsonObject {
  return new Parser(p).parseDocument()
}
