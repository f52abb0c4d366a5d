/**
 * The mailbox of `agentmsg mcp`: every verified message, kept in the agent directory's store
 * (keys under `cli/mcp/`) until the MCP client acknowledges it with `ack`. A message is written,
 * with the cursor counter in the same atomic batch, before the agent's `message` listener
 * returns; the client counts it as handled (and acknowledges it to its relay) only then (PROFILE
 * §6 persist → process). So a crash loses nothing, and a restart hands over again whatever the
 * MCP client did not acknowledge.
 */
import type { ReceivedMessage } from '@agentmsg/client/node'
import type { AgentStore } from './agent-dir.js'
import { info } from './command.js'

const PREFIX = 'cli/mcp/mailbox/'
const NEXT_KEY = 'cli/mcp/next'
/** Keys sort in cursor order: the sequence number, zero-padded. */
const keyOf = (seq: number) => `${PREFIX}${String(seq).padStart(16, '0')}`

/** Unacknowledged messages a mailbox holds by default (`--max-held`), and their bytes. */
export const DEFAULT_MAX_HELD = 10_000
const MAX_HELD_BYTES = 64 * 1024 * 1024
/** Bytes of held messages one read returns at most (at least one message): the SDK's stdio
 * transports drop a line over 10 MB. */
const MAX_READ_BYTES = 2 * 1024 * 1024

/** A held message as `receive` and the conversation resources give it (and D keeps it). */
export type HeldMessage = ReturnType<typeof held>

function held(m: ReceivedMessage) {
  const { message_id, sequence, phase, date, body } = m.message
  return {
    message_id,
    from: m.from,
    conversation_id: m.conversationId,
    sequence,
    phase,
    date,
    /** The text parts, joined by LF. */
    text: m.text,
    /** The value of each data part. */
    data: body.parts.flatMap((p) => (p.type === 'data' ? [p.data] : [])),
    level: m.level as number,
    source: m.source as string,
    known_contact: m.knownContact,
    sealed: m.sealed,
    /** The topic of a topic message, else null. */
    topic: m.topic ?? null,
    transport: m.transport as string,
    received_at: new Date().toISOString(),
  }
}

interface Entry {
  id: string
  conversation: string
  from: string
  bytes: number
}

export class Mailbox {
  readonly #storage: AgentStore
  readonly #max: number
  /** Sequence number → what reads, acks and the limits need; in sequence order. */
  readonly #entries = new Map<number, Entry>()
  #bytes = 0
  #next = 1
  #tail: Promise<unknown> = Promise.resolve()
  #waiting: Array<() => void> = []
  #stopped = false
  #park!: () => void
  /** Resolves once a listener was parked by {@link stop} (it never returns). */
  readonly parked = new Promise<void>((resolve) => (this.#park = resolve))
  /** Called after each message is held. */
  onHeld: () => void = () => {}

  private constructor(storage: AgentStore, max: number) {
    this.#storage = storage
    this.#max = max
  }

  /** The mailbox in `storage`, its index loaded; at most `max` messages held. */
  static async open(storage: AgentStore, max = DEFAULT_MAX_HELD): Promise<Mailbox> {
    const box = new Mailbox(storage, max)
    let after: string | undefined
    for (;;) {
      const page = await storage.list(PREFIX, { after, limit: 500 })
      for (const [key, value] of page)
        box.#index(Number(key.slice(PREFIX.length)), value as HeldMessage)
      if (page.length < 500) break
      after = page.at(-1)![0]
    }
    const next = ((await storage.get(NEXT_KEY)) as { next?: unknown } | undefined)?.next
    box.#next = Math.max(
      typeof next === 'number' ? next : 1,
      ([...box.#entries.keys()].at(-1) ?? 0) + 1,
    )
    return box
  }

  #index(seq: number, m: HeldMessage): void {
    const bytes = Buffer.byteLength(JSON.stringify(m))
    this.#entries.set(seq, {
      id: m.message_id,
      conversation: m.conversation_id,
      from: m.from,
      bytes,
    })
    this.#bytes += bytes
  }

  /**
   * The agent's `message` listener: resolves once `m` is durably held. One at a time, so cursors
   * only grow. When the mailbox is full it waits until `ack` makes room (the receive queue, then
   * the relay, keep what comes meanwhile); after {@link stop} it never resolves, so the message
   * stays in the client's store for the next run.
   */
  hold(m: ReceivedMessage): Promise<void> {
    const run = this.#tail.then(() => this.#hold(held(m)))
    this.#tail = run.catch(() => {})
    return run
  }

  async #hold(message: HeldMessage): Promise<void> {
    const bytes = Buffer.byteLength(JSON.stringify(message))
    let told = false
    for (;;) {
      if (this.#stopped) return this.#never()
      const full = this.#entries.size >= this.#max || this.#bytes + bytes > MAX_HELD_BYTES
      if (!full || this.#entries.size === 0) break
      if (!told)
        info(
          `the mailbox is full (${this.#entries.size} messages, ${this.#bytes} bytes not acknowledged): new messages wait (in this directory, then in the relay) until the MCP client acks some`,
        )
      told = true
      await new Promise<void>((resolve) => this.#waiting.push(resolve))
    }
    const seq = this.#next
    try {
      await this.#storage.batch([
        { type: 'put', key: keyOf(seq), value: message },
        { type: 'put', key: NEXT_KEY, value: { next: seq + 1 } },
      ])
    } catch (error) {
      // Returning (or throwing) would count the message as handled, held nowhere.
      const why = (error as Error).message
      info(`the mailbox cannot be written (${why}): no more messages are taken until a restart`)
      this.#stopped = true
      return this.#never()
    }
    this.#next = seq + 1
    this.#index(seq, message)
    this.onHeld()
  }

  /** Remove the held messages with these ids; how many were removed. */
  async ack(ids: readonly string[]): Promise<number> {
    const wanted = new Set(ids)
    const seqs = [...this.#entries].filter(([, e]) => wanted.has(e.id)).map(([seq]) => seq)
    if (seqs.length === 0) return 0
    await this.#storage.batch(seqs.map((seq) => ({ type: 'delete' as const, key: keyOf(seq) })))
    for (const seq of seqs) {
      this.#bytes -= this.#entries.get(seq)?.bytes ?? 0
      this.#entries.delete(seq)
    }
    for (const wake of this.#waiting.splice(0)) wake()
    return seqs.length
  }

  /**
   * Held messages after cursor `after` (of one conversation, if given), at most `limit` and
   * {@link MAX_READ_BYTES}; `next` is the cursor to pass on, `more` whether more follow it.
   */
  async read(
    after: number,
    limit: number,
    conversation?: string,
  ): Promise<{ messages: Array<HeldMessage & { cursor: string }>; next: string; more: boolean }> {
    const seqs = [...this.#entries]
      .filter(
        ([seq, e]) =>
          seq > after && (conversation === undefined || e.conversation === conversation),
      )
      .map(([seq, e]) => ({ seq, bytes: e.bytes }))
    const messages: Array<HeldMessage & { cursor: string }> = []
    let bytes = 0
    let next = after
    for (const s of seqs.slice(0, limit)) {
      if (messages.length > 0 && bytes + s.bytes > MAX_READ_BYTES) break
      const value = (await this.#storage.get(keyOf(s.seq))) as HeldMessage | undefined
      next = s.seq
      // Acknowledged meanwhile.
      if (value === undefined) continue
      messages.push({ ...value, cursor: String(s.seq) })
      bytes += s.bytes
    }
    return { messages, next: String(next), more: seqs.some((s) => s.seq > next) }
  }

  /** Each conversation with held messages: how many, and from whom. */
  conversations(): Array<{ conversation_id: string; held: number; from: string[] }> {
    const by = new Map<string, { held: number; from: Set<string> }>()
    for (const e of this.#entries.values()) {
      const c = by.get(e.conversation) ?? { held: 0, from: new Set<string>() }
      c.held++
      c.from.add(e.from)
      by.set(e.conversation, c)
    }
    return [...by].map(([id, c]) => ({ conversation_id: id, held: c.held, from: [...c.from] }))
  }

  /** A listener that never returns: its message stays in the client's store for the next run. */
  #never(): Promise<void> {
    this.#park()
    return new Promise<void>(() => {})
  }

  /** No more messages are held: listeners waiting, or called from now on, never return. */
  stop(): void {
    this.#stopped = true
    for (const wake of this.#waiting.splice(0)) wake()
  }
}
