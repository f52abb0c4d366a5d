/**
 * Shared fixtures of the receive tests: message bytes, a resolver with levels 0–3, and a memory
 * receive context with a one-word verdict for the pipeline tests. Agents and signed messages come
 * from `@agentmsg/conformance` (`fixtureAgent`, `signedMessage`).
 */

import { AuthLevelTracker } from '../src/auth-level.js'
import { base64urlDecode } from '../src/base64url.js'
import { utf8Encode } from '../src/bytes.js'
import {
  createIntroductionToken,
  hmacSigner,
  introductionFragment,
} from '../src/introduction-token.js'
import { ed25519Signer, generateKeyPair } from '../src/keys.js'
import { receive } from '../src/receive/pipeline.js'
import type { ReceiveContext, ReceiveInput, ReceiveResult } from '../src/receive/types.js'
import { ReplayGuard } from '../src/replay.js'
import { chainResolvers, didKeyResolver, type KeyResolver } from '../src/resolver.js'
import type { Message } from '../src/types.js'

/** JSON bytes, as a transport would hand them over. */
export function bytesOf(value: unknown): Uint8Array {
  return utf8Encode(JSON.stringify(value))
}

/**
 * The simple-name agent `carol` with a pinned key (level 2), an introduced key (level 1) and
 * an introduction token (level 0), plus a resolver that knows them and every did:key.
 */
export async function carol() {
  const pinned = await generateKeyPair()
  const introduced = await generateKeyPair()
  const token = createIntroductionToken()
  const secret = base64urlDecode(token)
  const hmacFragment = await introductionFragment(secret)
  const resolver: KeyResolver = chainResolvers(didKeyResolver(), {
    async resolve(lookup) {
      if (lookup.keyId === 'carol#pin' && lookup.alg === 'ed25519') {
        return {
          status: 'found',
          key: { alg: 'ed25519', publicKey: pinned.publicKey, source: 'pinned' },
        }
      }
      if (lookup.keyId === 'carol#intro' && lookup.alg === 'ed25519') {
        return {
          status: 'found',
          key: { alg: 'ed25519', publicKey: introduced.publicKey, source: 'introduction' },
        }
      }
      if (lookup.keyId === `carol#${hmacFragment}` && lookup.alg === 'hmac-sha256') {
        return { status: 'found', key: { alg: 'hmac-sha256', secret, source: 'shared-secret' } }
      }
      return { status: 'not_found', reason: `no key ${lookup.keyId}` }
    },
  })
  return {
    id: 'carol',
    resolver,
    strong: { id: 'carol', signer: ed25519Signer(pinned, 'carol#pin') },
    weak: { id: 'carol', signer: ed25519Signer(introduced, 'carol#intro') },
    hmac: { id: 'carol', signer: await hmacSigner(token, 'carol') },
  }
}

/** A promise with its resolve function, to hold the application at a known point. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

/** Wait until `check` is true (polling), or fail after `ms`. */
export async function until(check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out waiting')
    await new Promise((r) => setTimeout(r, 5))
  }
}

/** One day in milliseconds. */
export const DAY = 86_400_000

/** A memory receive context (did:key resolver, fresh replay guard and levels), overridable. */
export function context(overrides: Partial<ReceiveContext> = {}): ReceiveContext {
  return {
    resolver: didKeyResolver(),
    replay: new ReplayGuard(),
    levels: new AuthLevelTracker(),
    now: Date.now,
    ...overrides,
  }
}

/** The refusal's step and code, or the status when it was not refused. */
export function verdict(result: ReceiveResult): string {
  return result.status === 'refused' ? `${result.step}:${result.error.code}` : result.status
}

/** Receive `message` as JSON bytes, as a transport hands them over. */
export async function run(message: Message, ctx: ReceiveContext): Promise<string> {
  return verdict(await receive({ body: bytesOf(message) }, ctx))
}

/** Receive any input (bytes or a JSON value, with transport details) and return its verdict. */
export async function runInput(input: ReceiveInput, ctx: ReceiveContext): Promise<string> {
  return verdict(await receive(input, ctx))
}
