/**
 * In-page side of `../groups.spec.ts`: three relay-only did:key agents, B, C and D, each made as
 * an app makes one (`createAgent` with its relay and its own IndexedDB database,
 * `_relay-only-agent.ts`). They subscribe to a topic once; what their `message` listeners are
 * handed is recorded, `sealed` and `topic` included. Opened again after a reload, on the same
 * databases, they must still be subscribed (the topic list is in storage) without asking again.
 */
import type { Agent, ReceivedMessage } from '@agentmsg/client'
import { type RelayOnlyAgent, relayOnlyAgent } from './_relay-only-agent.js'

export type Key = 'b' | 'c' | 'd'
const KEYS: readonly Key[] = ['b', 'c', 'd']

/** One message handed to an agent's `message` listener. */
export interface GroupSeen {
  messageId: string
  from: string
  text: string
  sealed: boolean | 'not-for-me'
  level: number
  topic: string | undefined
}

/** Each agent's id and the topics it is subscribed to. */
export type GroupAgents = Record<Key, { id: string; topics: string[] }>

declare global {
  // eslint-disable-next-line no-var
  var __groups: {
    /** Open B, C and D on the databases `<dbPrefix>-b`, `-c`, `-d` (made on first use). */
    open(relayUrl: string, dbPrefix: string): Promise<GroupAgents>
    subscribe(topic: string): Promise<GroupAgents>
    /** What `key` was handed once it holds `n` messages (since this page load). */
    waitFor(key: Key, n: number): Promise<GroupSeen[]>
    /** Every agent's `error` events and `onError` reports. */
    errors(): Record<Key, string[]>
    close(): Promise<void>
  }
}

const toSeen = (m: ReceivedMessage): GroupSeen => ({
  messageId: m.message.message_id,
  from: m.from,
  text: m.text,
  sealed: m.sealed,
  level: m.level,
  topic: m.topic,
})

const pages = Object.fromEntries(KEYS.map((k) => [k, relayOnlyAgent(toSeen)])) as Record<
  Key,
  RelayOnlyAgent<GroupSeen>
>
const agents: Partial<Record<Key, Agent>> = {}

function whoIsSubscribed(): GroupAgents {
  const out = {} as GroupAgents
  for (const k of KEYS) {
    const a = agents[k]
    if (!a) throw new Error('open() first')
    out[k] = { id: a.id, topics: a.topics() }
  }
  return out
}

globalThis.__groups = {
  async open(relayUrl, dbPrefix) {
    for (const k of KEYS) agents[k] = await pages[k].start(relayUrl, `${dbPrefix}-${k}`)
    return whoIsSubscribed()
  },
  async subscribe(topic) {
    for (const k of KEYS) await agents[k]?.subscribe(topic)
    return whoIsSubscribed()
  },
  waitFor: (key, n) => pages[key].waitForMessages(n),
  errors: () => ({ b: pages.b.errors(), c: pages.c.errors(), d: pages.d.errors() }),
  async close() {
    for (const k of KEYS) await pages[k].close()
  },
}
