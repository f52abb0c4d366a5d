/**
 * The page agent shared by `sealed-relay.ts` and `noble-fallback.ts`: a relay-only did:key agent
 * exactly as an app makes one — `createAgent` with its relays and IndexedDB storage, no other
 * option (no sealing option: the default is what those specs check). It records what its
 * `message` listener is handed, as `toSeen` shapes it, and every `error` event and `onError`.
 */
import { type Agent, createAgent, type ReceivedMessage, type SendResult } from '@agentmsg/client'
import { indexedDbStorage } from '@agentmsg/storage-indexeddb'

export interface RelayOnlyAgent<Seen> {
  start(relayUrl: string, dbName: string): Promise<Agent>
  /** Resolves with everything handed over once there are `n` messages, else times out. */
  waitForMessages(n: number, timeoutMs?: number): Promise<Seen[]>
  send(to: string, text: string): Promise<SendResult>
  /** `error` events and `onError` reports so far. */
  errors(): string[]
  close(): Promise<void>
}

function errorText(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e)
}

export function relayOnlyAgent<Seen>(toSeen: (m: ReceivedMessage) => Seen): RelayOnlyAgent<Seen> {
  let agent: Agent | undefined
  let relays: string[] = []
  const seen: Seen[] = []
  const errors: string[] = []
  const waiters: Array<{ n: number; resolve: () => void }> = []

  return {
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
        seen.push(toSeen(m))
        for (const w of waiters.filter((x) => seen.length >= x.n)) {
          waiters.splice(waiters.indexOf(w), 1)
          w.resolve()
        }
      })
      return a
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
      // A did:key recipient is reached through the relays named here.
      return agent.send(to, text, { relays })
    },

    errors: () => errors,

    async close() {
      await agent?.close()
      agent = undefined
    },
  }
}
