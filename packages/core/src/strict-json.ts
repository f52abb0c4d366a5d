/**
 * The I-JSON (RFC 7493) parser of PROFILE §1: everything that reaches a signature check or an
 * application goes through here, so that no two readers of one message can see different values.
 * Browser-safe: no Node built-ins.
 *
 * Two paths with one verdict. The fast path lets native `JSON.parse` do syntax and value
 * construction, then proves on the result what `JSON.parse` hides (see `fastParse`); it only
 * ever accepts. Anything it cannot prove goes to an exact hand-written RFC 8259 parser, which
 * decides and, when it refuses, says what is wrong and where.
 */

import type { JsonObject, JsonValue } from './types.js'
import { invalidFormat } from './errors.js'
import { formatPath, isWellFormedString } from './jcs.js'

/** Options for {@link parseStrictJson}. */
export interface StrictJsonOptions {
  /**
   * Deepest nesting accepted; objects and arrays count and the top-level object is depth 1.
   * @default 64
   */
  maxDepth?: number
}

const DEFAULT_MAX_DEPTH = 64

/**
 * True when a parsed number is one PROFILE §1 lets through: finite, and not an integer beyond
 * ±(2^53−1). Every double of magnitude 2^53 or more is an integer, so this is a magnitude test;
 * fractions such as 1.5 or 0.1 are fine.
 */
export function isIJsonSafeNumber(n: number): boolean {
  return Math.abs(n) <= Number.MAX_SAFE_INTEGER
}

/**
 * Parse JSON text under PROFILE §1 (I-JSON, RFC 7493) and return its top-level object.
 *
 * Refused, each as `invalid_format` with the place named (member path in `field`, and an offset:
 * bytes for a `Uint8Array`, UTF-16 code units for a string):
 * - anything outside the RFC 8259 grammar: comments, trailing commas, single quotes, raw control
 *   characters in strings, leading zeros, whitespace other than space/tab/LF/CR, trailing data;
 * - invalid UTF-8 (for bytes) and a leading byte order mark, in bytes or as U+FEFF in a string
 *   (RFC 8259 §8.1 forbids sending one; accepting it would let two byte strings carry one message);
 * - duplicate member names at any depth, compared after unescaping (`"a"` and `"\u0061"` clash);
 * - lone surrogates, raw (in a string input) or escaped (`"\ud800"`);
 * - a top level that is not an object, and nesting deeper than `maxDepth`;
 * - number literals that overflow a double (`1e400`) or denote an integer beyond ±(2^53−1)
 *   (`12345678901234567890`, `1e20`, `1.5e300`).
 *
 * @throws AgentMsgError `invalid_format`.
 * @example
 * const msg = parseStrictJson(await request.bytes())
 */
export function parseStrictJson(
  input: string | Uint8Array,
  options?: StrictJsonOptions,
): JsonObject {
  const maxDepth = options?.maxDepth ?? DEFAULT_MAX_DEPTH
  if (!Number.isInteger(maxDepth) || maxDepth < 1) {
    throw new RangeError(`maxDepth must be a positive integer, got ${maxDepth}`)
  }
  const fromBytes = typeof input !== 'string'
  const text = fromBytes ? decodeUtf8(input) : input
  try {
    return (
      fastParse(text, maxDepth, fromBytes) ?? new Parser(text, maxDepth, fromBytes).parseDocument()
    )
  } catch (e) {
    // Both paths recurse at most maxDepth deep; only a caller-raised maxDepth can make that
    // outrun the stack.
    if (e instanceof RangeError) throw invalidFormat('JSON nested too deeply to parse')
    throw e
  }
}

// ---------------------------------------------------------------------------------------------
// Bytes

let decoder: TextDecoder | undefined

function decodeUtf8(bytes: Uint8Array): string {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    throw invalidFormat('byte order mark not allowed (at byte 0)')
  }
  // ignoreBOM keeps a BOM in the output instead of silently dropping it; none is left by now,
  // but the decoder must never be the place where input bytes disappear.
  decoder ??= new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
  try {
    return decoder.decode(bytes)
  } catch {
    throw invalidFormat(`invalid UTF-8 sequence at byte ${firstInvalidUtf8(bytes)}`)
  }
}

/** Offset where the first ill-formed UTF-8 (RFC 3629) sequence starts, for the message. */
function firstInvalidUtf8(b: Uint8Array): number {
  const n = b.length
  let i = 0
  while (i < n) {
    const c = b[i] as number
    if (c < 0x80) {
      i++
      continue
    }
    let need: number
    let lo = 0x80
    let hi = 0xbf
    if (c >= 0xc2 && c <= 0xdf) need = 1
    else if (c >= 0xe0 && c <= 0xef) {
      need = 2
      if (c === 0xe0) lo = 0xa0 // overlong
      if (c === 0xed) hi = 0x9f // UTF-16 surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      need = 3
      if (c === 0xf0) lo = 0x90 // overlong
      if (c === 0xf4) hi = 0x8f // beyond U+10FFFF
    } else return i
    for (let k = 1; k <= need; k++) {
      const d = b[i + k]
      if (d === undefined) return i
      if (k === 1 ? d < lo || d > hi : d < 0x80 || d > 0xbf) return i
    }
    i += need + 1
  }
  return n
}

/** UTF-8 length of `text.slice(0, end)`, to report byte offsets for byte input. */
function utf8Offset(text: string, end: number): number {
  let bytes = 0
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i)
    // Each half of a surrogate pair is counted as 2 of the pair's 4 bytes.
    bytes += c < 0x80 ? 1 : c < 0x800 || (c >= 0xd800 && c <= 0xdfff) ? 2 : 3
  }
  return bytes
}

// ---------------------------------------------------------------------------------------------
// Fast path

/** A `\u` escape of a surrogate half; rare except in ASCII-only writers (Python's default). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/
/** An escaped colon, which would spoil the colon count below. */
const COLON_ESCAPE = /\\u003[aA]/

interface Tally {
  maxDepth: number
  checkStrings: boolean
  members: number
  colons: number
}

function countColons(s: string): number {
  let n = 0
  let i = s.indexOf(':')
  while (i !== -1) {
    n++
    i = s.indexOf(':', i + 1)
  }
  return n
}

/**
 * Native `JSON.parse`, then proof of what it cannot see. Returns `undefined` unless the text is
 * certainly acceptable; the exact parser then decides.
 *
 * Duplicates are proven absent by counting. Valid JSON has one structural `:` per member, and
 * every other `:` sits in a string literal and survives unescaping as one `:` (unless written
 * `\u003a`, which sends us to the exact parser). So members-in-text = colons-in-text minus
 * colons-in-the-parsed-strings. A duplicate makes `JSON.parse` drop a member (and its subtree,
 * with its strings), so the tree then has fewer members than the text: the counts differ.
 */
function fastParse(text: string, maxDepth: number, fromBytes: boolean): JsonObject | undefined {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
  // The walk uses for-in, by far the fastest way over JSON.parse's objects; an enumerable
  // property planted on Object.prototype would show up in it, so then the exact parser decides.
  for (const _ in EMPTY) return undefined
  // Raw lone surrogates (only a string input can have them; decoded bytes cannot).
  if (!fromBytes && !isWellFormedString(text)) return undefined
  let checkStrings = false
  if (text.indexOf('\\u') !== -1) {
    if (COLON_ESCAPE.test(text)) return undefined
    // With the text well-formed, a lone surrogate can now only come from an escape, and shows
    // in the decoded strings; escaped pairs (ASCII-only writers' emoji) are fine.
    checkStrings = SURROGATE_ESCAPE.test(text)
  }
  const tally: Tally = { maxDepth, checkStrings, members: 0, colons: 0 }
  if (!walk(value as Record<string, unknown>, 1, tally)) return undefined
  if (countColons(text) - tally.colons !== tally.members) return undefined
  return value as JsonObject
}

const EMPTY = {}

function visitString(s: string, tally: Tally): boolean {
  if (s.indexOf(':') !== -1) tally.colons += countColons(s)
  return !tally.checkStrings || isWellFormedString(s)
}

function visit(v: unknown, depth: number, tally: Tally): boolean {
  switch (typeof v) {
    case 'string':
      return visitString(v, tally)
    case 'number':
      return isIJsonSafeNumber(v)
    case 'object':
      return v === null || walk(v as Record<string, unknown> | unknown[], depth + 1, tally)
    default:
      return true
  }
}

function walk(v: Record<string, unknown> | unknown[], depth: number, tally: Tally): boolean {
  if (depth > tally.maxDepth) return false
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (!visit(v[i], depth, tally)) return false
    return true
  }
  for (const k in v) {
    tally.members++
    if (!visitString(k, tally) || !visit(v[k], depth, tally)) return false
  }
  return true
}

// ---------------------------------------------------------------------------------------------
// Exact parser

const NUMBER_LITERAL = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y

function describeChar(c: number): string {
  if (Number.isNaN(c)) return 'end of input'
  if (c === 0x27) return `"'"`
  if (c >= 0x21 && c < 0x7f) return `'${String.fromCharCode(c)}'`
  return 'U+' + c.toString(16).toUpperCase().padStart(4, '0')
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
}

/** A recursive-descent parser for exactly the RFC 8259 grammar plus the PROFILE §1 rules. */
class Parser {
  private pos = 0
  /** Member names and indexes from the top down to the value being parsed. */
  private readonly path: (string | number)[] = []

  constructor(
    private readonly text: string,
    private readonly maxDepth: number,
    private readonly fromBytes: boolean,
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

  private fail(what: string, at = this.pos): never {
    const where = this.fromBytes ? `byte ${utf8Offset(this.text, at)}` : `offset ${at}`
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

  private enter(depth: number): void {
    if (depth > this.maxDepth) this.fail(`nesting deeper than ${this.maxDepth} levels`)
  }

  private parseObject(depth: number): JsonObject {
    this.enter(depth)
    const t = this.text
    const out: JsonObject = {}
    this.pos++
    this.skipWhitespace()
    if (t.charCodeAt(this.pos) === 0x7d) {
      this.pos++
      return out
    }
    for (;;) {
      const at = this.pos
      if (t.charCodeAt(at) !== 0x22) {
        const c = t.charCodeAt(at)
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
      const value = this.parseValue(depth)
      // Plain assignment to "__proto__" would set the prototype instead of adding a member.
      if (key === '__proto__') {
        Object.defineProperty(out, key, {
          value,
          enumerable: true,
          writable: true,
          configurable: true,
        })
      } else out[key] = value
      this.path.pop()
      this.skipWhitespace()
      const c = t.charCodeAt(this.pos)
      this.pos++
      if (c === 0x7d) return out
      if (c !== 0x2c) {
        this.pos--
        this.fail(
          Number.isNaN(c)
            ? 'unterminated object'
            : `unexpected ${describeChar(c)}, expected ',' or '}'`,
        )
      }
      this.skipWhitespace()
    }
  }

  private parseArray(depth: number): JsonValue[] {
    this.enter(depth)
    const t = this.text
    const out: JsonValue[] = []
    this.pos++
    this.skipWhitespace()
    if (t.charCodeAt(this.pos) === 0x5d) {
      this.pos++
      return out
    }
    for (;;) {
      this.path.push(out.length)
      out.push(this.parseValue(depth))
      this.path.pop()
      this.skipWhitespace()
      const c = t.charCodeAt(this.pos)
      this.pos++
      if (c === 0x5d) return out
      if (c !== 0x2c) {
        this.pos--
        this.fail(
          Number.isNaN(c)
            ? 'unterminated array'
            : `unexpected ${describeChar(c)}, expected ',' or ']'`,
        )
      }
      this.skipWhitespace()
    }
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
    // The grammar ends a number at the first character it cannot continue with; these cases
    // are ones a lenient parser would read on, so they get a clearer message than "expected ','".
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

  /** The text an escape stood for, set by `parseEscape`. */
  private escaped = ''

  /** Decode the escape at `i` into `this.escaped`; returns the index after it. */
  private parseEscape(i: number): number {
    const t = this.text
    const e = t.charCodeAt(i + 1)
    switch (e) {
      case 0x22:
        this.escaped = '"'
        return i + 2
      case 0x5c:
        this.escaped = '\\'
        return i + 2
      case 0x2f:
        this.escaped = '/'
        return i + 2
      case 0x62:
        this.escaped = '\b'
        return i + 2
      case 0x66:
        this.escaped = '\f'
        return i + 2
      case 0x6e:
        this.escaped = '\n'
        return i + 2
      case 0x72:
        this.escaped = '\r'
        return i + 2
      case 0x74:
        this.escaped = '\t'
        return i + 2
      case 0x75: {
        const u = this.hex4(i)
        if (u < 0xd800 || u > 0xdfff) {
          this.escaped = String.fromCharCode(u)
          return i + 6
        }
        // A high surrogate escape must be followed at once by a low one: together they are one
        // character; anything else is a lone surrogate that UTF-8 cannot carry.
        if (u <= 0xdbff && t.charCodeAt(i + 6) === 0x5c && t.charCodeAt(i + 7) === 0x75) {
          const v = this.hex4(i + 6)
          if (v >= 0xdc00 && v <= 0xdfff) {
            this.escaped = String.fromCharCode(u, v)
            return i + 12
          }
        }
        return this.fail(`lone surrogate escape ${t.slice(i, i + 6)} in string`, i)
      }
      default:
        if (Number.isNaN(e)) return this.fail('unterminated string', i)
        return this.fail(`invalid escape \\${String.fromCharCode(e)} in string`, i)
    }
  }

  /** The value of the four hex digits of the `\u` escape at `i`. */
  private hex4(i: number): number {
    const t = this.text
    for (let k = i + 2; k < i + 6; k++) {
      if (!isHex(t.charCodeAt(k))) this.fail('invalid \\u escape, expected four hex digits', i)
    }
    return parseInt(t.slice(i + 2, i + 6), 16)
  }
}
