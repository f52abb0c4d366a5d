import { utf8Encode } from './bytes.js'
import { canonicalize } from './jcs.js'

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
  let text = ''
  for (const name of signedHeaders) text += canonicalize(message[name]) + '\n'
  if (signedBody) text += canonicalize(message.body) + '\n'
  text += canonicalize(params)
  return utf8Encode(text)
}
