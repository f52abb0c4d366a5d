// WebSocket first-frame auth as the relay checks it (PROFILE §9); the client's answer is in
// ./sign.ts.
import { getDefaultCryptoProvider } from '#crypto-default'
import { isAgentId } from '../agent-id.js'
import { type KeySource, levelForKeySource } from '../auth-level.js'
import { base64urlEncode } from '../base64url.js'
import { randomBytes } from '../bytes.js'
import type { CryptoProvider } from '../crypto/provider.js'
import { invalidFormat } from '../errors.js'
import { resolveEd25519Key } from '../identity/key-usability.js'
import type { KeyResolver } from '../resolver.js'
import { parseStrictJson } from '../strict-json.js'
import { type AuthLevel, isObject } from '../types.js'
import { decodeSig, refuse } from '../verify-candidates.js'
import { checkKeyId, type WsChallengeFrame, wsAuthPayload } from './sign.js'

/** A fresh challenge frame. */
export function createChallenge(): WsChallengeFrame {
  return { type: 'challenge', nonce: base64urlEncode(randomBytes(32)) }
}

/** Input of {@link verifyWsAuth}. */
export interface VerifyWsAuthInput {
  /** Parsed, or the text itself. */
  frame: unknown
  relayBaseUrl: string
  nonce: string
  resolver: KeyResolver
  provider?: CryptoProvider
  /** No `created`: a document key's state is judged as of now. @default Date.now() */
  now?: number
  transitionMs?: number
}

export interface VerifiedWsAuth {
  agent: string
  keyId: string
  after?: string
  source: KeySource
  level: AuthLevel
}

const FRAME_MEMBERS = new Set(['type', 'agent', 'key_id', 'sig', 'after'])

/** Check an auth frame against this connection's challenge. */
export async function verifyWsAuth(input: VerifyWsAuthInput): Promise<VerifiedWsAuth> {
  const now = input.now ?? Date.now()
  const provider = input.provider ?? getDefaultCryptoProvider()
  const raw = typeof input.frame === 'string' ? parseStrictJson(input.frame) : input.frame
  if (!isObject(raw)) throw invalidFormat('the auth frame must be a JSON object', 'frame')
  const frame = raw
  for (const k of Object.keys(frame)) {
    if (!FRAME_MEMBERS.has(k)) throw invalidFormat(`unknown member "${k}"`, 'frame')
  }
  if (frame.type !== 'auth') throw invalidFormat('must be "auth"', 'type')
  if (!isAgentId(frame.agent)) throw invalidFormat('must be an agent id in normal form', 'agent')
  for (const name of ['key_id', 'sig'] as const) {
    if (typeof frame[name] !== 'string') throw invalidFormat('must be a string', name)
  }
  if (frame.after !== undefined && typeof frame.after !== 'string') {
    throw invalidFormat('must be a string', 'after')
  }
  const agent = frame.agent
  const keyId = frame.key_id as string
  const { agent: owner, fragment } = checkKeyId(keyId, (m) => refuse(m, 'key_id'))
  if (owner !== agent) throw refuse(`key_id belongs to ${owner}, not to ${agent}`, 'key_id')
  const sig = decodeSig(frame.sig as string, 64, (m) => refuse(m, 'sig'))
  const { transitionMs } = input
  const options = { created: now, now, field: 'key_id', transitionMs }
  const key = await resolveEd25519Key(input.resolver, { keyId, agent, fragment }, options)
  const payload = wsAuthPayload(input.relayBaseUrl, input.nonce)
  if (!(await provider.ed25519Verify(key.publicKey, payload, sig))) {
    throw refuse(`signature by ${keyId} does not verify`, 'sig')
  }
  const { source } = key
  const out: VerifiedWsAuth = { agent, keyId, source, level: levelForKeySource(source) }
  if (frame.after !== undefined) out.after = frame.after as string
  return out
}
