/**
 * WebSocket first-frame auth (PROFILE §9): the relay sends `{type:"challenge",nonce}`, the
 * client answers `{type:"auth",agent,key_id,sig,after?}` where `sig` is the base64url Ed25519
 * signature of the three lines `agentmsg-ws-auth`, the relay base URL and the nonce, joined by
 * LF with no trailing LF.
 */

import { getDefaultCryptoProvider } from '#crypto-default'
import { isAgentId } from '../agent-id.js'
import { type KeySource, levelForKeySource } from '../auth-level.js'
import { base64urlDecode, base64urlEncode } from '../base64url.js'
import { randomBytes } from '../bytes.js'
import type { CryptoProvider } from '../crypto/provider.js'
import { didKeyFragment, isDidKey } from '../did-key.js'
import { AgentMsgError, invalidFormat } from '../errors.js'
import { resolveEd25519Key } from '../resolve-key.js'
import type { KeyResolver } from '../resolver.js'
import { parseStrictJson } from '../strict-json.js'
import type { AuthLevel } from '../types.js'
import { keyIdAgent, type WsChallengeFrame, wsAuthPayload } from './ws-auth-sign.js'

export {
  type SignWsAuthInput,
  signWsAuth,
  WS_AUTH_CONTEXT,
  type WsAuthFrame,
  type WsChallengeFrame,
  wsAuthPayload,
} from './ws-auth-sign.js'

/** A fresh challenge frame: the nonce is base64url of 32 random bytes. */
export function createChallenge(): WsChallengeFrame {
  return { type: 'challenge', nonce: base64urlEncode(randomBytes(32)) }
}

/** Input of {@link verifyWsAuth}. */
export interface VerifyWsAuthInput {
  /** The client's frame: the parsed JSON object, or the text frame itself. */
  frame: unknown
  /** The relay's configured base URL. */
  relayBaseUrl: string
  /** The nonce this connection's challenge carried. */
  nonce: string
  resolver: KeyResolver
  provider?: CryptoProvider
  /**
   * Epoch ms; the auth has no `created`, so an identity-document key's retired/revoked state
   * is judged as of now. @default Date.now()
   */
  now?: number
  /** Transition period for retired keys (PROFILE §4). @default core's 14 days */
  transitionMs?: number
}

/** An authenticated WebSocket connection. */
export interface VerifiedWsAuth {
  agent: string
  keyId: string
  after?: string
  source: KeySource
  level: AuthLevel
}

const FRAME_MEMBERS = new Set(['type', 'agent', 'key_id', 'sig', 'after'])

/**
 * Check a WebSocket auth frame against the challenge this connection sent.
 *
 * @throws AgentMsgError
 * - `invalid_format`: not an object (or strict I-JSON text), `type` not `auth`, a member
 *   missing, of the wrong type or unknown, `agent` not an agent id in normal form.
 * - `invalid_signature`: `key_id` malformed or of another agent, `sig` not canonical base64url
 *   of 64 bytes, or the signature does not verify.
 * - `unknown_sender`: the key does not resolve; `key_revoked`: revoked or retired too long ago.
 * - `unavailable` (with `retryAfter`): the key lookup failed for now.
 */
export async function verifyWsAuth(input: VerifyWsAuthInput): Promise<VerifiedWsAuth> {
  const now = input.now ?? Date.now()
  const provider = input.provider ?? getDefaultCryptoProvider()
  const raw = typeof input.frame === 'string' ? parseStrictJson(input.frame) : input.frame
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw invalidFormat('the auth frame must be a JSON object', 'frame')
  }
  const frame = raw as Record<string, unknown>
  for (const k of Object.keys(frame)) {
    if (!FRAME_MEMBERS.has(k)) throw invalidFormat(`unknown member "${k}"`, 'frame')
  }
  if (frame.type !== 'auth') throw invalidFormat('must be "auth"', 'type')
  if (typeof frame.agent !== 'string') throw invalidFormat('must be a string', 'agent')
  if (!isAgentId(frame.agent)) throw invalidFormat('must be an agent id in normal form', 'agent')
  if (typeof frame.key_id !== 'string') throw invalidFormat('must be a string', 'key_id')
  if (typeof frame.sig !== 'string') throw invalidFormat('must be a string', 'sig')
  if (frame.after !== undefined && typeof frame.after !== 'string') {
    throw invalidFormat('must be a string', 'after')
  }
  const agent = frame.agent
  const keyId = frame.key_id

  const owner = keyIdAgent(keyId)
  if (owner === undefined) {
    throw new AgentMsgError('invalid_signature', 'key_id must be <agent_id>#<fragment>', {
      field: 'key_id',
    })
  }
  if (owner !== agent) {
    throw new AgentMsgError('invalid_signature', `key_id belongs to ${owner}, not to ${agent}`, {
      field: 'key_id',
    })
  }
  const fragment = keyId.slice(owner.length + 1)
  if (isDidKey(agent) && fragment !== didKeyFragment(agent)) {
    throw new AgentMsgError(
      'invalid_signature',
      "a did:key key_id's fragment is the DID's method-specific id",
      { field: 'key_id' },
    )
  }
  let sig: Uint8Array
  try {
    sig = base64urlDecode(frame.sig)
  } catch {
    throw new AgentMsgError('invalid_signature', 'sig must be canonical unpadded base64url', {
      field: 'sig',
    })
  }
  if (sig.length !== 64)
    throw new AgentMsgError('invalid_signature', 'an ed25519 sig is 64 bytes', { field: 'sig' })

  const key = await resolveEd25519Key(
    input.resolver,
    { keyId, agent, fragment },
    {
      created: now,
      now,
      field: 'key_id',
      ...(input.transitionMs === undefined ? {} : { transitionMs: input.transitionMs }),
    },
  )
  if (
    !(await provider.ed25519Verify(
      key.publicKey,
      wsAuthPayload(input.relayBaseUrl, input.nonce),
      sig,
    ))
  ) {
    throw new AgentMsgError('invalid_signature', `signature by ${keyId} does not verify`, {
      field: 'sig',
    })
  }
  const out: VerifiedWsAuth = {
    agent,
    keyId,
    source: key.source,
    level: levelForKeySource(key.source),
  }
  if (frame.after !== undefined) out.after = frame.after as string
  return out
}
