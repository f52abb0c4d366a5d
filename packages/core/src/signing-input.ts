import { utf8Encode } from './bytes.js'
import { canonicalize, canonicalizeWithout } from './jcs.js'

/** The PROFILE §3 signing input: JCS of each signed header, the body and the params, LF-joined. */
export function buildSigningInput(
  message: Record<string, unknown>,
  signedHeaders: readonly string[],
  signedBody: boolean,
  params: Record<string, unknown>,
): Uint8Array {
  return utf8Encode(signedLines(message, signedHeaders, signedBody) + canonicalize(params))
}

/** The lines before the params line: built once for several signers. */
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

// Params canonicalized in place: a copy would need care with a `"__proto__"` member, which
// must stay a member (and so signed).
export function receivedSigningText(
  message: Record<string, unknown>,
  sig: Record<string, unknown> & { signed_headers: readonly string[] },
): string {
  return signedLines(message, sig.signed_headers, true) + canonicalizeWithout(sig, 'sig')
}
