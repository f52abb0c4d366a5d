/**
 * `@agentmsg/core/encoding` — the encodings the packages share: base64url, UTF-8, random bytes,
 * RFC 8785 bytes, strict I-JSON parsing and RFC 3339 timestamps (PROFILE §1).
 *
 * @packageDocumentation
 */
export { base64urlDecode, base64urlEncode } from './base64url.js'
export { randomBytes, utf8Decode, utf8Encode } from './bytes.js'
export { canonicalizeToBytes } from './jcs.js'
export { buildSigningInput } from './signing-input.js'
export { cloneJsonValue } from './storage/clone.js'
export { INTEGER_MEMBERS } from './strict-json/prepare.js'
export { parseStrictJson } from './strict-json.js'
export { parseStrictJsonAsync } from './strict-json-async.js'
export { formatTimestamp, parseTimestamp } from './timestamps.js'
