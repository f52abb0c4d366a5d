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
import { randomBytes, utf8Encode } from '../bytes.js'
import type { CryptoProvider } from '../crypto/provider.js'
import { didKeyFragment, isDidKey } from '../did-key.js'
import { AgentMsgError, invalidFormat } from '../errors.js'
import type { Signer } from '../keys.js'
import { resolveEd25519Key } from '../resolve-key.js'
import type { KeyResolver } from '../resolver.js'
import { parseStrictJson } from '../strict-json.js'
import type { AuthLevel } from '../types.js'

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

/** A fresh challenge frame: the nonce is base64url of 32 random bytes. */
export function createChallenge(): WsChallengeFrame {
  return { type: 'challenge', nonce: base64urlEncode(randomBytes(32)) }
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

function keyIdAgent(keyId: string): string | undefined {
  if (typeof keyId !== 'string') return undefined
  const hash = keyId.lastIndexOf('#')
  if (hash <= 0 || hash === keyId.length - 1) return undefined
  return keyId.slice(0, hash)
}

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
