/**
 * base58btc (the Bitcoin alphabet; leading zero bytes written as `1`), for did:key (PROFILE §4).
 * Hand-written rather than `multiformats/bases/base58`: did:key needs only these two functions,
 * and the multiformats base layer cost a browser agent 4 KB minified.
 * Checked against the Bitcoin and draft-msporny-base58 vectors and against multiformats in the
 * tests.
 */
import { invalidFormat } from './errors.js'

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'

/** base58btc of `bytes`, without a multibase prefix. */
export function base58btcEncode(bytes: Uint8Array): string {
  let zeros = 0
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++
  // Base-58 digits, most significant first, in a buffer of log(256)/log(58) ≈ 1.37 digits per
  // byte: the number is multiplied by 256 and the next byte added, over the digits in use
  // (quadratic, which is fine for keys of a few dozen bytes).
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

/** Decode base58btc text (no multibase prefix). */
export function base58btcDecode(text: string, field?: string): Uint8Array {
  let zeros = 0
  while (zeros < text.length && text[zeros] === '1') zeros++
  // Bytes, least significant first, built as the digits are read.
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
