/**
 * In-page side of `../noble-fallback.spec.ts`: a relay-only did:key agent exactly as an app
 * makes one (`createAgent` with its relays and IndexedDB storage), in a page whose WebCrypto has
 * no Ed25519 (the spec's init script refuses it before this bundle runs). Everything Ed25519 it
 * does — its key, its signatures, relay agent auth, verifying what it receives — must then go
 * through the `@agentmsg/noble` fallback, which `#crypto-default` imports lazily.
 */

import {
  createMessage,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  getDefaultCryptoProvider,
  signMessage,
  webCryptoSupportsEd25519,
} from '@agentmsg/core'
import { didKeyResolver, verifyMessage } from '@agentmsg/core/receive'
import {
  checkEd25519Vectors,
  type VectorCheckResult,
} from '../../../packages/core/test/shared/ed25519-vectors.js'
import { type RelayOnlyAgent, relayOnlyAgent } from './_relay-only-agent.js'

export type { VectorCheckResult }

/** What the page found before any agent ran. */
export interface FallbackProbe {
  /** `crypto.subtle.importKey` refused an Ed25519 key (the init script works). */
  importKeyRefused: boolean
  /** core's probe, which `#crypto-default` asks. */
  webCryptoSupportsEd25519: boolean
  /** `getDefaultCryptoProvider().name` before and after its first operation. */
  providerName: { beforeUse: string; afterUse: string }
  /** RFC 8032 §7.1 and Wycheproof through the default provider. */
  vectors: VectorCheckResult[]
  /** signMessage → verifyMessage with a fresh did:key, and one signature byte changed. */
  roundTrip: { level: number | undefined; alteredRefused: boolean }
}

/** One message handed to the page's `message` listener. */
export interface FallbackSeen {
  messageId: string
  from: string
  text: string
  sealed: boolean
  level: number
}

declare global {
  // eslint-disable-next-line no-var
  var __nobleFallback: Omit<RelayOnlyAgent<FallbackSeen>, 'start'> & {
    probe(vectors: { rfc8032: unknown; wycheproof: unknown }): Promise<FallbackProbe>
    start(relayUrl: string, dbName: string): Promise<{ id: string; providerName: string }>
  }
}

const agent = relayOnlyAgent<FallbackSeen>((m) => ({
  messageId: m.message.message_id,
  from: m.from,
  text: m.text,
  sealed: m.sealed === true,
  level: m.level,
}))

async function importKeyRefused(): Promise<boolean> {
  try {
    await crypto.subtle.importKey('raw', new Uint8Array(32), { name: 'Ed25519' }, false, ['verify'])
    return false
  } catch {
    return true
  }
}

async function roundTrip(): Promise<FallbackProbe['roundTrip']> {
  const keys = await generateKeyPair()
  const did = didKeyFromPublicKey(keys.publicKey)
  const unsigned = createMessage({
    from: did,
    to: did,
    conversationId: 'noble-fallback',
    sequence: 0,
    phase: 'greeting',
    text: 'signed with noble',
  })
  const signed = await signMessage(unsigned, ed25519Signer(keys))
  const ok = await verifyMessage(signed, didKeyResolver())
  const sigs = signed.security!.signatures!
  const sig = sigs[0]!.sig
  const altered = {
    ...signed,
    security: { signatures: [{ ...sigs[0]!, sig: (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1) }] },
  }
  // verifyMessage throws `invalid_signature` when a signature fails.
  const alteredRefused = await verifyMessage(altered, didKeyResolver()).then(
    () => false,
    (e: { code?: string }) => e.code === 'invalid_signature',
  )
  return { level: ok.level, alteredRefused }
}

globalThis.__nobleFallback = {
  async probe(vectors) {
    const provider = getDefaultCryptoProvider()
    const beforeUse = provider.name
    const refused = await importKeyRefused()
    const supports = await webCryptoSupportsEd25519()
    const results = await checkEd25519Vectors(provider, vectors as never)
    return {
      importKeyRefused: refused,
      webCryptoSupportsEd25519: supports,
      providerName: { beforeUse, afterUse: provider.name },
      vectors: results,
      roundTrip: await roundTrip(),
    }
  },

  ...agent,
  async start(relayUrl, dbName) {
    const a = await agent.start(relayUrl, dbName)
    return { id: a.id, providerName: getDefaultCryptoProvider().name }
  },
}
