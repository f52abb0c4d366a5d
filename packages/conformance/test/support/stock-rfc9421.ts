/**
 * A client that signs requests the way a stock RFC 9421 implementation does
 * (`http-message-signatures` with Node's own Ed25519 key), never through agentmsg's code: the
 * independent side of the PROFILE §9 agent auth interop tests (core's and the relay's).
 */
import { createHash, generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto'
import { didKeyFragment, didKeyFromPublicKey } from '@agentmsg/core'
import { createSigner, httpbis } from 'http-message-signatures'

/** A did:key agent whose Ed25519 key lives in Node's crypto only. */
export interface StockSignerAgent {
  /** The agent's did:key id. */
  id: string
  /** `<id>#<fragment>`, the key id it signs with. */
  keyId: string
  privateKey: KeyObject
}

/** A fresh did:key agent with a Node crypto key. */
export function stockSignerAgent(): StockSignerAgent {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519')
  const raw = new Uint8Array(Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url'))
  const id = didKeyFromPublicKey(raw)
  return { id, keyId: `${id}#${didKeyFragment(id)}`, privateKey }
}

/**
 * The headers of a request signed by the library. Its default parameters are keyid, alg,
 * created, expires; the profile has a nonce instead of expires, so it goes where expires would.
 * With a body, the request is JSON and `content-digest` (RFC 9530 sha-256) is signed too.
 *
 * @example
 * const bob = stockSignerAgent()
 * const headers = await stockSignedHeaders(bob, 'GET', `${relay}/relay/messages?agent=…`)
 */
export async function stockSignedHeaders(
  agent: StockSignerAgent,
  method: string,
  url: string,
  body?: Uint8Array,
): Promise<Record<string, string>> {
  const headers: Record<string, string> = {}
  if (body) {
    headers['content-type'] = 'application/json'
    headers['content-digest'] = `sha-256=:${createHash('sha256').update(body).digest('base64')}:`
  }
  const signed = await httpbis.signMessage(
    {
      key: createSigner(agent.privateKey, 'ed25519', agent.keyId),
      name: 'sig1',
      fields: body ? ['@method', '@target-uri', 'content-digest'] : ['@method', '@target-uri'],
      params: ['keyid', 'alg', 'created', 'nonce'],
      paramValues: { nonce: randomBytes(32).toString('base64url') },
    },
    { method, url, headers },
  )
  return signed.headers as Record<string, string>
}
