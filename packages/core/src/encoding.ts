/**
 * `@agentmsg/core/encoding` — the byte and JSON encodings the other packages share: base58btc,
 * base64url (PROFILE §1), hex, UTF-8, random bytes, constant-time comparison, RFC 8785 bytes,
 * strict I-JSON parsing (PROFILE §1), RFC 3339 timestamps.
 *
 * @packageDocumentation
 */
export { base58btcDecode, base58btcEncode } from './base58.js'
export { base64Decode, base64Encode, base64urlDecode, base64urlEncode } from './base64url.js'
export {
  constantTimeEqual,
  hexDecode,
  hexEncode,
  randomBytes,
  utf8Decode,
  utf8Encode,
} from './bytes.js'
export { canonicalizeToBytes } from './jcs.js'
export { buildSigningInput } from './signing-input.js'
export { cloneJsonValue } from './storage/clone.js'
export { INTEGER_MEMBERS, parseStrictJson, type StrictJsonOptions } from './strict-json.js'
export { parseStrictJsonAsync } from './strict-json-async.js'
export { formatTimestamp, parseTimestamp } from './timestamps.js'
