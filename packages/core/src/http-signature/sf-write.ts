/**
 * Writing the RFC 8941 structured-field values relay agent auth sends (PROFILE §9): quoted
 * strings and byte sequences, from which the signer spells its one `Signature-Input` shape.
 * Hand-written rather than with `structured-headers`, whose serializer cost a browser agent
 * 2.6 KB minified (issue 12 measurement); the relay's verifier still parses and re-serialises
 * with `structured-headers` (./fields.ts), and the tests check that both spell every signed
 * request alike.
 */
import { base64Encode } from '../base64url.js'
import { invalidFormat } from '../errors.js'

/** A value for an RFC 8941 sf-string: only printable ASCII can be written. */
export function sfString(value: string, field: string): string {
  if (typeof value !== 'string' || !/^[\x20-\x7e]*$/.test(value)) {
    throw invalidFormat('must be printable ASCII to fit an RFC 8941 string', field)
  }
  return value
}

/**
 * An sf-string item (RFC 8941 §4.1.6): quoted, with `"` and `\` escaped. The value must be
 * printable ASCII (see {@link sfString}).
 */
export function sfQuoted(value: string): string {
  return `"${value.replace(/[\\"]/g, '\\$&')}"`
}

/** An sf-binary item (RFC 8941 §4.1.8): padded base64 between colons. */
export function sfBinary(bytes: Uint8Array): string {
  return `:${base64Encode(bytes)}:`
}
