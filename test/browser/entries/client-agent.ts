/**
 * In-page side of `../client-agent.spec.ts`: a relay-only did:key `Agent` (`createAgent` from
 * `@agentmsg/client`) whose whole memory is IndexedDB (`indexedDbStorage`), so a page reload
 * re-creates the same agent: same id, relay subscription and cursor, replay memory, sequence
 * numbers.
 *
 * The agent is NOT created when the bundle loads: the spec calls `start()`, so it can publish a
 * message while the reloaded page has no stream connected. What the page saw is kept in
 * `sessionStorage` (which survives reloads of the tab), so the spec can check that every message
 * was handed to the application exactly once across reloads.
 */
import { type Agent, createAgent, type SendResult } from '@agentmsg/client'
import { indexedDbStorage } from '@agentmsg/storage-indexeddb'

export type Mode = 'sse' | 'ws'

/** One message handed to the page's `message` listener. */
export interface Seen {
  /** Which page load (1 = before the reload) handled it. */
  load: number
  messageId: string
  from: string
  to: string | undefined
  conversationId: string
  sequence: number
  phase: string
  text: string
  level: number
  source: string
  transport: string
  /** The reply's id, once `reply()` resolved. */
  replyId?: string
  replyRoute?: string
}

/** Everything the page remembers across reloads (sessionStorage). */
export interface PageLog {
  /** How many times the entry was loaded in this tab. */
  loads: number
  /** The agent id after each `start()`, in order. */
  ids: string[]
  seen: Seen[]
  /** `error` events and `onError` reports, with the load they happened in. */
  errors: string[]
}

export interface StartInfo {
  id: string
  keyId: string
  load: number
  isSecureContext: boolean
  origin: string
}

declare global {
  // eslint-disable-next-line no-var
  var __clientAgent: {
    start(options: { relayUrl: string; dbName: string; mode: Mode }): Promise<StartInfo>
    send(to: string, text: string, options?: { conversationId?: string }): Promise<SendResult>
    /** Resolve once `n` messages were handled in total (over all loads), else time out. */
    waitForSeen(n: number, timeoutMs?: number): Promise<PageLog>
    log(): PageLog
    close(): Promise<void>
  }
}

const LOG_KEY = 'agentmsg-client-agent-log'

function readLog(): PageLog {
  const raw = sessionStorage.getItem(LOG_KEY)
  return raw ? (JSON.parse(raw) as PageLog) : { loads: 0, ids: [], seen: [], errors: [] }
}

function writeLog(log: PageLog): void {
  sessionStorage.setItem(LOG_KEY, JSON.stringify(log))
}

function update(change: (log: PageLog) => void): PageLog {
  const log = readLog()
  change(log)
  writeLog(log)
  return log
}

function errorText(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e)
}

// Count this load at once, before anything else can happen.
const load = update((log) => {
  log.loads++
}).loads

let agent: Agent | undefined

globalThis.__clientAgent = {
  async start({ relayUrl, dbName, mode }) {
    if (agent) throw new Error('already started')
    const storage = await indexedDbStorage({ dbName })
    const a = await createAgent({
      storage,
      relays: [relayUrl],
      mode,
      onError: (e) => {
        update((log) => log.errors.push(`load ${load} onError: ${errorText(e)}`))
      },
    })
    agent = a
    a.on('error', (e) => {
      update((log) =>
        log.errors.push(
          `load ${load} error event: ${errorText(e.error)}` +
            (e.message ? ` (message ${e.message.message_id})` : ''),
        ),
      )
    })
    a.on('message', async (m) => {
      const record: Seen = {
        load,
        messageId: m.message.message_id,
        from: m.from,
        to: m.message.to.agent,
        conversationId: m.conversationId,
        sequence: m.message.sequence,
        phase: m.message.phase,
        text: m.text,
        level: m.level,
        source: m.source,
        transport: m.transport,
      }
      // Recorded before replying: a second delivery would show even if the reply failed.
      update((log) => log.seen.push(record))
      const r = await a.reply(m, `re: ${m.text}`)
      update((log) => {
        const s = log.seen.find((x) => x.messageId === record.messageId && x.load === load)
        if (s) {
          s.replyId = r.messageId
          s.replyRoute = r.route
        }
      })
    })
    update((log) => log.ids.push(a.id))
    return {
      id: a.id,
      keyId: a.identity.keyId,
      load,
      isSecureContext: globalThis.isSecureContext,
      origin: location.origin,
    }
  },

  async send(to, text, options = {}) {
    if (!agent) throw new Error('start() first')
    return agent.send(to, text, options)
  },

  async waitForSeen(n, timeoutMs = 15_000) {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const log = readLog()
      // Wait for the replies too: `replyId` is set once reply() resolved.
      if (log.seen.length >= n && log.seen.every((s) => s.replyId)) return log
      if (Date.now() > deadline) {
        throw new Error(`waited ${timeoutMs} ms for ${n} messages: ${JSON.stringify(log)}`)
      }
      await new Promise((r) => setTimeout(r, 50))
    }
  },

  log: readLog,

  async close() {
    await agent?.close()
    agent = undefined
  },
}
