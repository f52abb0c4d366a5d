/** Strict UTF-8 decoding for the strict JSON parser, with byte offsets for its messages. */
import { invalidFormat } from '../errors.js'

let decoder: TextDecoder | undefined

export function decodeUtf8(bytes: Uint8Array): string {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    throw invalidFormat('byte order mark not allowed (at byte 0)')
  }
  // ignoreBOM: the decoder must never be where input bytes disappear.
  decoder ??= new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
  try {
    return decoder.decode(bytes)
  } catch {
    throw invalidFormat(`invalid UTF-8 sequence at byte ${firstInvalidUtf8(bytes)}`)
  }
}

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

export function utf8Offset(text: string, end: number): number {
  let bytes = 0
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i)
    // Each half of a surrogate pair is counted as 2 of the pair's 4 bytes.
    bytes += c < 0x80 ? 1 : c < 0x800 || (c >= 0xd800 && c <= 0xdfff) ? 2 : 3
  }
  return bytes
}
