/**
 * In-page side of `../sealed-relay.spec.ts`: a relay-only did:key agent as an app makes one,
 * `createAgent` with its relays and IndexedDB storage and no sealing options at all, so what
 * the spec sees is the default (PROFILE §8, SPEC §5.7.2: relays are untrusted unless the agent
 * says otherwise). It records what its `message` listener is handed, `sealed` included, and
 * sends through the relay when asked.
 */
import { type Agent, createAgent, type SendResult } from '@agentmsg/client'
import { indexedDbStorage } from '@agentmsg/storage-indexeddb'

/** One message handed to the page's `message` listener. */
export interface SealedSeen {
  messageId: string
  from: string
  text: string
  sealed: boolean
  transport: string
  level: number
  /** The body parts as the agent handed them (opened, when it came sealed). */
  parts: unknown
}

export interface SealedStart {
  id: string
  isSecureContext: boolean
  origin: string
}

declare global {
  // eslint-disable-next-line no-var
  var __sealedRelay: {
    start(relayUrl: string, dbName: string): Promise<SealedStart>
    /** Resolves with everything handed over once there are `n` messages, else times out. */
    waitForMessages(n: number, timeoutMs?: number): Promise<SealedSeen[]>
    send(to: string, text: string): Promise<SendResult>
    /** `error` events and `onError` reports so far. */
    errors(): string[]
    close(): Promise<void>
  }
}

let agent: Agent | undefined
let relays: string[] = []
const seen: SealedSeen[] = []
const errors: string[] = []
const waiters: Array<{ n: number; resolve: () => void }> = []

function errorText(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e)
}

globalThis.__sealedRelay = {
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
        transport: m.transport,
        level: m.level,
        parts: m.message.body.parts,
      })
      for (const w of waiters.filter((x) => seen.length >= x.n)) {
        waiters.splice(waiters.indexOf(w), 1)
        w.resolve()
      }
    })
    return { id: a.id, isSecureContext: globalThis.isSecureContext, origin: location.origin }
  },

  async waitForMessages(n, timeoutMs = 15_000) {
    if (seen.length < n) {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          reject(new Error(`waited ${timeoutMs} ms for ${n} messages: ${JSON.stringify(seen)}`))
        }, timeoutMs)
        waiters.push({
          n,
          resolve: () => {
            clearTimeout(timer)
            resolve()
          },
        })
      })
    }
    return seen
  },

  async send(to, text) {
    if (!agent) throw new Error('start() first')
    // A did:key recipient is reached through the relays named here; no sealing option.
    return agent.send(to, text, { relays })
  },

  errors: () => errors,

  async close() {
    await agent?.close()
    agent = undefined
  },
}
