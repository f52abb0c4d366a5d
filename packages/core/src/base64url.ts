// base64url (RFC 4648 §5, unpadded) for wire fields, padded base64 for RFC 9421 / 9530 headers.
// Decoding is canonical (PROFILE §1): two strings must never stand for the same bytes.
import { invalidFormat } from './errors.js'

const URL_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
const STD_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'

function encodeTable(alphabet: string): Uint8Array {
  return Uint8Array.from(alphabet, (c) => c.charCodeAt(0))
}

function decodeTable(alphabet: string): Int8Array {
  const table = new Int8Array(128).fill(-1)
  for (let i = 0; i < alphabet.length; i++) table[alphabet.charCodeAt(i)] = i
  return table
}

const URL_ENC = encodeTable(URL_ALPHABET)
const STD_ENC = encodeTable(STD_ALPHABET)
const URL_DEC = decodeTable(URL_ALPHABET)
const STD_DEC = decodeTable(STD_ALPHABET)
const PAD = 61 // '='

// Decoding the ASCII bytes is much faster than building the string a character at a time.
const ascii = new TextDecoder('latin1')
// Small outputs (signatures, keys) are written here: a fresh Uint8Array over 64 bytes costs more
// than the whole encoding of a signature. Safe: `encode` returns a string.
const scratch = new Uint8Array(256)

function encode(bytes: Uint8Array, enc: Uint8Array, pad: boolean): string {
  const n = bytes.length
  const full = n - (n % 3)
  const tail = n - full
  const outLen = pad ? Math.ceil(n / 3) * 4 : Math.floor(n / 3) * 4 + (tail === 0 ? 0 : tail + 1)
  const out = outLen <= scratch.length ? scratch : new Uint8Array(outLen)
  let o = 0
  for (let i = 0; i < full; i += 3) {
    const v = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!
    out[o++] = enc[v >>> 18]!
    out[o++] = enc[(v >>> 12) & 63]!
    out[o++] = enc[(v >>> 6) & 63]!
    out[o++] = enc[v & 63]!
  }
  if (tail > 0) {
    const v = (bytes[full]! << 16) | (tail === 2 ? bytes[full + 1]! << 8 : 0)
    for (let k = 0; k <= tail; k++) out[o++] = enc[(v >>> (18 - 6 * k)) & 63]!
    if (pad) for (let k = tail; k < 3; k++) out[o++] = PAD
  }
  return ascii.decode(out.subarray(0, outLen))
}

/** Decode `len` characters of `text` (no padding among them), canonically. */
function decode(
  text: string,
  len: number,
  dec: Int8Array,
  field: string | undefined,
  allowNonZeroTrailingBits: boolean,
): Uint8Array {
  const rem = len % 4
  // One leftover character carries only 6 bits: no byte can end there.
  if (rem === 1) throw invalidFormat('base64 has an impossible length', field)
  const out = new Uint8Array(Math.floor(len / 4) * 3 + (rem === 0 ? 0 : rem - 1))
  const full = len - rem
  let o = 0
  let i = 0
  for (; i < full; i += 4) {
    const a = sextet(text, i, dec, field)
    const b = sextet(text, i + 1, dec, field)
    const c = sextet(text, i + 2, dec, field)
    const d = sextet(text, i + 3, dec, field)
    const v = (a << 18) | (b << 12) | (c << 6) | d
    out[o++] = v >>> 16
    out[o++] = (v >>> 8) & 255
    out[o++] = v & 255
  }
  if (rem > 0) {
    // The bits past the last whole byte must be zero, or two texts would stand for one value.
    const spare = (6 * rem) % 8
    let v = 0
    for (let k = 0; k < rem; k++) v = (v << 6) | sextet(text, i + k, dec, field)
    if ((v & ((1 << spare) - 1)) !== 0 && !allowNonZeroTrailingBits) throw nonCanonical(field)
    for (let k = rem - 2; k >= 0; k--) out[o++] = (v >>> (spare + 8 * k)) & 255
  }
  return out
}

function sextet(text: string, i: number, dec: Int8Array, field: string | undefined): number {
  const code = text.charCodeAt(i)
  const v = code < 128 ? dec[code]! : -1
  if (v < 0) throw invalidFormat(`invalid base64 character at ${i}`, field)
  return v
}

function nonCanonical(field: string | undefined) {
  return invalidFormat('base64 has non-zero unused trailing bits', field)
}

/** base64url without padding (PROFILE §1). */
export function base64urlEncode(bytes: Uint8Array): string {
  return encode(bytes, URL_ENC, false)
}

/** Decode canonical unpadded base64url (PROFILE §1). */
export function base64urlDecode(text: string, field?: string): Uint8Array {
  if (typeof text !== 'string') throw invalidFormat('base64url must be a string', field)
  return decode(text, text.length, URL_DEC, field, false)
}

/** Padded standard base64 (RFC 4648 §4), as RFC 8941 requires. */
export function base64Encode(bytes: Uint8Array): string {
  return encode(bytes, STD_ENC, true)
}

/** Options for {@link base64Decode}. */
export interface Base64DecodeOptions {
  /** Accept missing padding and non-zero pad bits (RFC 8941 §4.2.7). @default false */
  lenient?: boolean
}

/** Decode padded base64 (RFC 4648 §4), by default only in canonical form. */
export function base64Decode(
  text: string,
  field?: string,
  options: Base64DecodeOptions = {},
): Uint8Array {
  if (typeof text !== 'string') throw invalidFormat('base64 must be a string', field)
  const lenient = options.lenient === true
  let len = text.length
  if (!lenient && len % 4 !== 0) throw invalidFormat('base64 padding is missing', field)
  // Strip at most two trailing '='; any other '=' is then an invalid character.
  if (len > 0 && text.charCodeAt(len - 1) === PAD) len--
  if (len > 0 && text.charCodeAt(len - 1) === PAD) len--
  // Padding never completes a full quantum ("Zm9v=" is wrong though the stripped text decodes).
  if (text.length !== len && len % 4 === 0) throw invalidFormat('base64 has stray padding', field)
  return decode(text, len, STD_DEC, field, lenient)
}
