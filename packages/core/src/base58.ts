// base58btc for did:key (PROFILE §4), hand-written: the multiformats base layer cost a browser
// agent 4 KB minified.
import { invalidFormat } from './errors.js'

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'

/** Bytes as base58btc (Bitcoin alphabet), leading zero bytes as `1`s. */
export function base58btcEncode(bytes: Uint8Array): string {
  let zeros = 0
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++
  // Base-58 digits, most significant first, ≈ 1.37 per byte (quadratic: fine for keys).
  const size = (((bytes.length - zeros) * 138) / 100 + 1) | 0
  const digits = new Uint8Array(size)
  let used = 0
  for (let i = zeros; i < bytes.length; i++) {
    let carry = bytes[i] as number
    let n = 0
    for (let k = size - 1; (carry !== 0 || n < used) && k >= 0; k--, n++) {
      carry += 256 * (digits[k] as number)
      digits[k] = carry % 58
      carry = (carry / 58) | 0
    }
    used = n
  }
  let k = size - used
  while (k < size && digits[k] === 0) k++
  let out = '1'.repeat(zeros)
  for (; k < size; k++) out += ALPHABET[digits[k] as number]
  return out
}

/** base58btc back to bytes; anything off the alphabet is `invalid_format` naming `field`. */
export function base58btcDecode(text: string, field?: string): Uint8Array {
  let zeros = 0
  while (zeros < text.length && text[zeros] === '1') zeros++
  const bytes: number[] = []
  for (let i = zeros; i < text.length; i++) {
    let carry = ALPHABET.indexOf(text[i] as string)
    if (carry < 0) throw invalidFormat('not valid base58btc', field)
    for (let j = 0; j < bytes.length; j++) {
      carry += (bytes[j] as number) * 58
      bytes[j] = carry & 0xff
      carry >>= 8
    }
    while (carry > 0) {
      bytes.push(carry & 0xff)
      carry >>= 8
    }
  }
  const out = new Uint8Array(zeros + bytes.length)
  for (let i = 0; i < bytes.length; i++) out[out.length - 1 - i] = bytes[i] as number
  return out
}
