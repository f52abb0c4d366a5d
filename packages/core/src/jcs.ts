/** RFC 8785 canonical JSON (JCS): the form every signature covers (PROFILE §1, §3). */
import { invalidFormat } from './errors.js'

// A depth cap rather than a visited-set catches cycles without a cost on every object; far above
// PROFILE §1's 64, so any value that may go on the wire fits.
const MAX_DEPTH = 512

/** Characters that stop the fast string path: `"` `\` C0 controls and any surrogate half. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: RFC 8785 escapes U+0000–U+001F
const NEEDS_CARE = /["\\\u0000-\u001f\ud800-\udfff]/

const SURROGATE = /[\ud800-\udfff]/

// Native in Node 20 and current browsers (ES2024); typed loosely because lib is ES2023.
const nativeIsWellFormed = (String.prototype as { isWellFormed?: () => boolean }).isWellFormed

/** True when `s` has no lone surrogate (so it can be encoded as UTF-8). */
export function isWellFormedString(s: string): boolean {
  if (!SURROGATE.test(s)) return true
  if (nativeIsWellFormed !== undefined) return nativeIsWellFormed.call(s)
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0xd800 || c > 0xdfff) continue
    if (c > 0xdbff) return false
    const d = s.charCodeAt(i + 1)
    if (!(d >= 0xdc00 && d <= 0xdfff)) return false
    i++
  }
  return true
}

// Thrown inside the recursion so each level adds its path segment on the way out.
class Refusal {
  readonly path: (string | number)[] = []
  constructor(readonly reason: string) {}
}

function serializeString(s: string, what = 'string'): string {
  // Skipping the native call for strings that need no escaping is measurably faster.
  if (!NEEDS_CARE.test(s)) return '"' + s + '"'
  if (!isWellFormedString(s)) throw new Refusal(`lone surrogate in ${what}`)
  // For well-formed strings JSON.stringify escapes exactly as RFC 8785 §3.2.2.2 requires.
  return JSON.stringify(s)
}

const OBJECT_PROTO = Object.prototype

function isPlainObject(o: object): boolean {
  const proto: unknown = Object.getPrototypeOf(o)
  if (proto === OBJECT_PROTO || proto === null) return true
  // A plain object from another realm: its Object.prototype is prototype-less, ctor named Object.
  if (typeof proto !== 'object' || Object.getPrototypeOf(proto) !== null) return false
  const ctor: unknown = Object.getOwnPropertyDescriptor(proto, 'constructor')?.value
  return typeof ctor === 'function' && ctor.name === 'Object'
}

function describe(value: unknown): string {
  if (value === undefined) return 'undefined'
  if (typeof value === 'function') return 'a function'
  if (typeof value === 'symbol') return 'a symbol'
  if (typeof value === 'bigint') return 'a bigint (convert it to a number or string first)'
  if (typeof value === 'number') return String(value)
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name
  return typeof name === 'string' && name !== '' ? `a ${name} object` : 'a non-plain object'
}

function serialize(value: unknown, depth: number): string {
  switch (typeof value) {
    case 'string':
      return serializeString(value)
    case 'number':
      // RFC 8785 §3.2.2.3 is ECMAScript Number.prototype.toString; String(-0) is already "0".
      if (value - value !== 0) throw new Refusal(`${describe(value)} is not a JSON number`)
      return '' + value
    case 'boolean':
      return value ? 'true' : 'false'
    case 'object':
      if (value === null) return 'null'
      if (depth >= MAX_DEPTH) {
        throw new Refusal(`nesting deeper than ${MAX_DEPTH} levels (or a cycle)`)
      }
      if (Array.isArray(value)) return serializeArray(value, depth + 1)
      if (!isPlainObject(value)) {
        // JSON.stringify would silently reshape these (often through toJSON): a signature must
        // cover exactly what the caller sees.
        throw new Refusal(`${describe(value)} is not a plain object or array`)
      }
      return serializeObject(value as Record<string, unknown>, depth + 1)
    default:
      throw new Refusal(`${describe(value)} cannot be represented in JSON`)
  }
}

function serializeArray(a: readonly unknown[], depth: number): string {
  const n = a.length
  if (n === 0) return '[]'
  let i = 0
  try {
    let out = '[' + serialize(a[0], depth)
    for (i = 1; i < n; i++) out += ',' + serialize(a[i], depth)
    return out + ']'
  } catch (e) {
    if (e instanceof Refusal) e.path.push(i)
    throw e
  }
}

// RFC 8785 §3.2.3 order (UTF-16 code units). Message objects are small and often sorted: an
// insertion sort beats the builtin by ~20% of the whole serialisation.
function sortKeys(keys: string[]): string[] {
  const n = keys.length
  if (n > 24) return keys.sort()
  for (let i = 1; i < n; i++) {
    const k = keys[i] as string
    let j = i - 1
    while (j >= 0 && (keys[j] as string) > k) {
      keys[j + 1] = keys[j] as string
      j--
    }
    keys[j + 1] = k
  }
  return keys
}

function serializeObject(
  o: Record<string, unknown>,
  depth: number,
  keys = sortKeys(Object.keys(o)),
): string {
  const n = keys.length
  if (n === 0) return '{}'
  let i = 0
  try {
    let out = '{'
    for (; i < n; i++) {
      const k = keys[i] as string
      out += (i === 0 ? '' : ',') + serializeString(k, 'member name') + ':' + serialize(o[k], depth)
    }
    return out + '}'
  } catch (e) {
    if (e instanceof Refusal) e.path.push(keys[i] as string)
    throw e
  }
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/

/** A path, outermost first, as `a.b[0]["x y"]`: the style of `AgentMsgError.field`. */
export function formatPath(segments: readonly (string | number)[]): string | undefined {
  let out = ''
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`
    else if (IDENTIFIER.test(s)) out += out === '' ? s : '.' + s
    else out += `[${isWellFormedString(s) ? JSON.stringify(s) : '<lone surrogate>'}]`
  }
  return out === '' ? undefined : out
}

/** Serialise a JSON value in RFC 8785 canonical form. */
export function canonicalize(value: unknown): string {
  try {
    return serialize(value, 0)
  } catch (e) {
    throw asFormatError(e)
  }
}

function asFormatError(e: unknown): unknown {
  if (e instanceof Refusal)
    return invalidFormat(`cannot canonicalize: ${e.reason}`, formatPath(e.path.reverse()))
  if (e instanceof RangeError) return invalidFormat('cannot canonicalize: value too deeply nested')
  return e
}

/** {@link canonicalize} of `o` without its member `omit` (a signature without `sig`, PROFILE §3). */
export function canonicalizeWithout(o: Record<string, unknown>, omit: string): string {
  const keys = Object.keys(o)
  const at = keys.indexOf(omit)
  if (at >= 0) keys.splice(at, 1)
  try {
    return serializeObject(o, 1, sortKeys(keys))
  } catch (e) {
    throw asFormatError(e)
  }
}

let encoder: TextEncoder | undefined

/** {@link canonicalize} as UTF-8 bytes: the exact bytes that are signed and size-checked. */
export function canonicalizeToBytes(value: unknown): Uint8Array {
  encoder ??= new TextEncoder()
  return encoder.encode(canonicalize(value))
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: any character past ASCII
const NON_ASCII = /[^\u0000-\u007f]/

/** The byte length of {@link canonicalizeToBytes} without encoding it (quotas, PROFILE §6, §9). */
export function canonicalSize(value: unknown): number {
  const text = canonicalize(value)
  if (!NON_ASCII.test(text)) return text.length
  let bytes = text.length
  // canonicalize refuses lone surrogates: a pair is 4 bytes, 2 a unit, as any unit from U+0800 is 3.
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c >= 0x80) bytes += c < 0x800 || (c >= 0xd800 && c <= 0xdfff) ? 1 : 2
  }
  return bytes
}
