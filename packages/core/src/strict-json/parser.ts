// The exact strict JSON parser (PROFILE §1): recursive descent over the RFC 8259 grammar, refusing
// duplicate names, a non-object top level and deep nesting, and saying where.
import { defineMember, type JsonObject, type JsonValue } from '../types.js'
import { isPlainInteger, markNonInteger, matchesIntegerMember } from './integers.js'
import type { PreparedStrictJson } from './prepare.js'
import { describeChar, Scanner } from './scanner.js'

class Parser extends Scanner {
  constructor(private readonly rules: PreparedStrictJson) {
    super(rules.text, rules.fromBytes)
  }

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
}

/** The exact parser's verdict on prepared input. */
export function exactParse(p: PreparedStrictJson): JsonObject {
  return new Parser(p).parseDocument()
}
