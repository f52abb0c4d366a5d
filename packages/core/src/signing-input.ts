import { utf8Encode } from './bytes.js'
import { canonicalize, canonicalizeWithout } from './jcs.js'

/**
 * The PROFILE §3 signing input: for each name in `signed_headers`, `JCS(message[name])`; then
 * `JCS(body)` when `signed_body`; then `JCS(params)` where params is the signature object
 * without `sig` — joined by LF, UTF-8 encoded. JCS never emits a raw LF, so the join is
 * unambiguous.
 */
export function buildSigningInput(
  message: Record<string, unknown>,
  signedHeaders: readonly string[],
  signedBody: boolean,
  params: Record<string, unknown>,
): Uint8Array {
  return utf8Encode(signedLines(message, signedHeaders, signedBody) + canonicalize(params))
}

/**
 * The lines of the signing input before the params line, each ending in LF: the same for every
 * signature of one message, so a signer with several keys builds them once.
 * @internal
 */
export function signedLines(
  message: Record<string, unknown>,
  signedHeaders: readonly string[],
  signedBody: boolean,
): string {
  let text = ''
  for (const name of signedHeaders) text += canonicalize(message[name]) + '\n'
  if (signedBody) text += canonicalize(message.body) + '\n'
  return text
}

/**
 * The signing input of a received signature object, as text (UTF-8 encode it): its params are
 * every own member but `sig` (PROFILE §3), canonicalized in place. Building the params as a
 * copy would need care with a `"__proto__"` member, which must stay a member (and so signed).
 * @internal
 */
export function receivedSigningText(
  message: Record<string, unknown>,
  sig: Record<string, unknown> & { signed_headers: readonly string[] },
): string {
  return signedLines(message, sig.signed_headers, true) + canonicalizeWithout(sig, 'sig')
}
