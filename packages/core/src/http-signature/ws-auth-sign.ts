/**
 * The client's side of WebSocket first-frame auth (PROFILE §9): answering the relay's challenge.
 * Apart from the relay's side (./ws-challenge.ts), which resolves keys and parses frames, so a
 * browser agent's bundle carries only this.
 */
import { base64urlEncode } from '../base64url.js'
import { utf8Encode } from '../bytes.js'
import { invalidFormat } from '../errors.js'
import type { Signer } from '../keys.js'

/** The first line of the signed WebSocket auth payload. */
export const WS_AUTH_CONTEXT = 'agentmsg-ws-auth'

/** The relay's first frame. */
export interface WsChallengeFrame {
  type: 'challenge'
  nonce: string
}

/** The client's answer to the challenge. */
export interface WsAuthFrame {
  type: 'auth'
  agent: string
  key_id: string
  /** base64url of the 64-byte Ed25519 signature of {@link wsAuthPayload}. */
  sig: string
  /** Resume after this cursor. */
  after?: string
}

/** The bytes signed in a WebSocket auth frame. */
export function wsAuthPayload(relayBaseUrl: string, nonce: string): Uint8Array {
  return utf8Encode(`${WS_AUTH_CONTEXT}\n${relayBaseUrl}\n${nonce}`)
}

/** Input of {@link signWsAuth}. */
export interface SignWsAuthInput {
  /** The relay base URL, in normal form, as the relay has it configured. */
  relayBaseUrl: string
  /** The nonce of the relay's challenge frame. */
  nonce: string
  /** An Ed25519 signer of `agent`. */
  signer: Signer
  /** The agent whose mailbox the connection reads. */
  agent: string
  /** Resume after this cursor. */
  after?: string
}

/**
 * Answer a relay's challenge.
 *
 * @throws AgentMsgError `invalid_format` when the signer is not Ed25519 or its key id does not
 *   belong to `agent`.
 *
 * @example
 * ws.send(JSON.stringify(await signWsAuth({ relayBaseUrl, nonce: challenge.nonce, signer, agent })))
 */
export async function signWsAuth(input: SignWsAuthInput): Promise<WsAuthFrame> {
  const { signer, agent } = input
  if (signer.alg !== 'ed25519')
    throw invalidFormat('relay auth signs with ed25519 only', 'signer.alg')
  if (keyIdAgent(signer.keyId) !== agent) {
    throw invalidFormat(`key id ${signer.keyId} does not belong to ${agent}`, 'signer.keyId')
  }
  const sig = await signer.sign(wsAuthPayload(input.relayBaseUrl, input.nonce))
  const frame: WsAuthFrame = {
    type: 'auth',
    agent,
    key_id: signer.keyId,
    sig: base64urlEncode(sig),
  }
  if (input.after !== undefined) frame.after = input.after
  return frame
}

/** @internal The agent of `<agent>#<fragment>`, when the key id has that shape. */
export function keyIdAgent(keyId: string): string | undefined {
  if (typeof keyId !== 'string') return undefined
  const hash = keyId.lastIndexOf('#')
  if (hash <= 0 || hash === keyId.length - 1) return undefined
  return keyId.slice(0, hash)
}
