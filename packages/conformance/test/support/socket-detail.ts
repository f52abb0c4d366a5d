/**
 * For the tests of servers that report failed outbound requests (PROFILE §4): such a reply must
 * say only that the request failed, never what a port scanner would read in it.
 */

/** Socket, TLS and DNS words a port scanner would read in an error (PROFILE §4). */
const SOCKET_DETAIL =
  /ECONN|EHOST|ENETUNREACH|ETIMEDOUT|ENOTFOUND|EAI_|socket|certificate|self.signed|wrong version|\bTLS\b|\bSSL\b|handshake|timed out/i

/**
 * The socket detail in `text`, or `undefined` if there is none. Identifiers are blanked first:
 * a random did:key or ULID can spell "TLS" or "econn" by chance, and that is not a leak.
 */
export function socketDetail(text: string): string | undefined {
  const blanked = text
    .replace(/did:key:z[1-9A-HJ-NP-Za-km-z]+/g, 'did:key:<id>')
    .replace(/[A-Za-z0-9_-]{20,}/g, '<id>')
  return SOCKET_DETAIL.exec(blanked)?.[0]
}
