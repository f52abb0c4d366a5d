/**
 * In-page side of `../noble-fallback.spec.ts`: a relay-only did:key agent exactly as an app
 * makes one (`createAgent` with its relays and IndexedDB storage), in a page whose WebCrypto has
 * no Ed25519 (the spec's init script refuses it before this bundle runs). Everything Ed25519 it
 * does — its key, its signatures, relay agent auth, verifying what it receives — must then go
 * through the `@agentmsg/noble` fallback, which `#crypto-default` imports lazily.
 */
import { type Agent, createAgent, type SendResult } from '@agentmsg/client'
import { webCryptoSupportsEd25519 } from '@agentmsg/core'
import {
  createMessage,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  getDefaultCryptoProvider,
  signMessage,
} from '@agentmsg/core/message'
import { didKeyResolver, verifyMessage } from '@agentmsg/core/receive'
import { indexedDbStorage } from '@agentmsg/storage-indexeddb'
import {
  checkEd25519Vectors,
  type VectorCheckResult,
} from '../../../packages/core/test/shared/ed25519-vectors.js'

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
  var __nobleFallback: {
    probe(vectors: { rfc8032: unknown; wycheproof: unknown }): Promise<FallbackProbe>
    start(relayUrl: string, dbName: string): Promise<{ id: string; providerName: string }>
    waitForMessages(n: number, timeoutMs?: number): Promise<FallbackSeen[]>
    send(to: string, text: string): Promise<SendResult>
    errors(): string[]
    close(): Promise<void>
  }
}

let agent: Agent | undefined
let relays: string[] = []
const seen: FallbackSeen[] = []
const errors: string[] = []

const errorText = (e: unknown) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e))

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

  async start(relayUrl, dbName) {
    if (agent) throw new Error('already started')
    relays = [relayUrl]
    const a = await createAgent({
      storage: await indexedDbStorage({ dbName }),
      relays,
      onError: (e) => void errors.push(`onError: ${errorText(e)}`),
    })
    agent = a
    a.on('error', (e) => void errors.push(`error event: ${errorText(e.error)}`))
    a.on('message', (m) => {
      seen.push({
        messageId: m.message.message_id,
        from: m.from,
        text: m.text,
        sealed: m.sealed,
        level: m.level,
      })
    })
    return { id: a.id, providerName: getDefaultCryptoProvider().name }
  },

  async waitForMessages(n, timeoutMs = 15_000) {
    const until = Date.now() + timeoutMs
    while (seen.length < n) {
      if (Date.now() > until) throw new Error(`waited ${timeoutMs} ms for ${n} messages`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    return seen
  },

  async send(to, text) {
    if (!agent) throw new Error('start() first')
    return agent.send(to, text, { relays })
  },

  errors: () => errors,

  async close() {
    await agent?.close()
    agent = undefined
  },
}
