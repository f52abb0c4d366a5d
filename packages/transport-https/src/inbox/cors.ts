/** CORS preflight of PROFILE §6, for the inbox, identity and capabilities endpoints. */
import { CORS_RESPONSE_HEADERS, type HttpReply } from './responses.js'

/** The request headers a browser may send, exactly as PROFILE §6 lists them. */
export const CORS_ALLOW_HEADERS =
  'Content-Type, Accept, Idempotency-Key, Signature, Signature-Input, Content-Digest, Last-Event-ID'

/**
 * 204 answer to an `OPTIONS` preflight: any origin, the path's methods, PROFILE §6's header
 * list, `Retry-After` exposed, no credentials (no `Access-Control-Allow-Credentials`).
 *
 * @param methods the path's methods, e.g. `POST, OPTIONS`
 */
export function preflightReply(methods: string): HttpReply {
  return {
    status: 204,
    body: null,
    headers: {
      ...CORS_RESPONSE_HEADERS,
      'access-control-allow-methods': methods,
      'access-control-allow-headers': CORS_ALLOW_HEADERS,
      // Browsers cap this (Chromium at 2 h); a day is the common ask.
      'access-control-max-age': '86400',
      allow: methods,
    },
  }
}
