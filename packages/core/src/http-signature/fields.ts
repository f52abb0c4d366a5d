/**
 * Reading and writing the structured fields of relay agent auth (`Signature-Input`, `Signature`,
 * `Content-Digest`: RFC 8941 dictionaries) through the `structured-headers` package.
 */
import {
  type Dictionary,
  type InnerList,
  type Item,
  parseDictionary,
  serializeDictionary,
  serializeInnerList,
} from 'structured-headers'

export type { Dictionary as SfDictionary, InnerList as SfInnerList, Item as SfItem }
export { serializeDictionary as serializeSfDictionary, serializeInnerList as serializeSfInnerList }

/** Request headers as `fetch` or Node hand them over. */
export type HeaderInput = Headers | Record<string, string>

/**
 * A header's field value with surrounding whitespace removed, several lines joined with
 * `", "` as RFC 9110 §5.3 combines them; `undefined` when absent.
 */
export function getHeader(headers: HeaderInput, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return (headers as Headers).get(name)?.replace(/^[ \t]+|[ \t]+$/g, '') ?? undefined
  }
  const lower = name.toLowerCase()
  const values: string[] = []
  for (const [k, v] of Object.entries(headers as Record<string, string>)) {
    if (k.toLowerCase() === lower && typeof v === 'string')
      values.push(v.replace(/^[ \t]+|[ \t]+$/g, ''))
  }
  return values.length === 0 ? undefined : values.join(', ')
}

const withoutWhitespace = (text: string) => text.replace(/[ \t]/g, '')

/**
 * Parse an RFC 8941 dictionary, and require that the text differ from the serialisation of what
 * was parsed only in RFC 8941's optional whitespace. The parsed form is lossy where PROFILE §9 is
 * strict: a repeated key or parameter silently overwrites (PROFILE §9: exactly one signature,
 * exactly four parameters), `1.0` parses as the integer `1` (`created` is an integer), and
 * byte sequences are decoded leniently (the profile's base64 is canonical and padded). Each of
 * those leaves a difference that is not whitespace, so comparing the two texts with whitespace
 * removed refuses them all; both parse to the same structure, so no other difference remains.
 *
 * @throws Error with a readable message when the text is malformed or not canonically spelled.
 */
export function parseSfDictionary(text: string): Dictionary {
  const parsed = parseDictionary(text)
  let canonical: string
  try {
    canonical = serializeDictionary(parsed)
  } catch (e) {
    throw new Error(`holds a value that cannot be written back: ${(e as Error).message}`)
  }
  if (withoutWhitespace(text) !== withoutWhitespace(canonical)) {
    throw new Error(
      'differs from its RFC 8941 serialisation in more than optional whitespace (a repeated key or parameter, or a non-canonical number or byte sequence)',
    )
  }
  return parsed
}

/** True for an inner list member (`(…);params`), false for an item. */
export function isSfInnerList(value: Item | InnerList): value is InnerList {
  return Array.isArray(value[0])
}

export { sfString } from './sf-write.js'
