/**
 * `@agentmsg/core/encoding` — the encodings the protocol is built on, for packages that
 * implement parts of it (transports, relays, Storage adapters) rather than apps, which get by
 * with the root entry:
 *
 * - bytes ↔ text: base64 and base64url (RFC 4648, canonical decoding, PROFILE §1), base58btc
 *   (did:key), hex, and strict UTF-8 (invalid UTF-8 is refused, PROFILE §1);
 * - the byte primitives that go with them: constant-time comparison and random bytes;
 * - JSON values: `cloneJsonValue`, the checked deep copy every Storage adapter stores (it
 *   refuses what JSON would silently change: `undefined`, `NaN`, a `Date`, a sparse array).
 *
 * Isomorphic, like the root entry.
 *
 * @packageDocumentation
 */

export { base58btcDecode, base58btcEncode } from './base58.js'
export type { Base64DecodeOptions } from './base64url.js'
export { base64Decode, base64Encode, base64urlDecode, base64urlEncode } from './base64url.js'
export {
  constantTimeEqual,
  hexDecode,
  hexEncode,
  randomBytes,
  utf8Decode,
  utf8Encode,
} from './bytes.js'
export { cloneJsonValue } from './storage/clone.js'
