/**
 * Subscribing to topics on every transport that can, and groups: a member list per topic kept
 * in storage (`groups/<topic>`) that a publish seals for. Loaded on first use.
 */
import { parseAgentId, type Storage, type Transport } from '@agentmsg/core'
import { checkTopic } from './topics.js'
import type { Content, Group, PublishOptions, PublishResult } from './types.js'

/** Subscribe on every transport that can; stored once one could. */
export async function subscribeTopic(
  storage: Storage,
  live: Set<string>,
  transports: readonly Transport[],
  topic: string,
  options: { webhook?: string } = {},
): Promise<void> {
  checkTopic(topic)
  const had = live.has(topic)
  // Taken before asking: a relay may hand over the first message as soon as it is subscribed.
  live.add(topic)
  try {
    for (const t of transports) await t.subscribe?.(topic, options)
    await storage.put(`topics/${topic}`, true)
  } catch (error) {
    if (!had) live.delete(topic)
    throw error
  }
}

/** Unsubscribe on every transport, then forget the topic. */
export async function unsubscribeTopic(
  storage: Storage,
  live: Set<string>,
  transports: readonly Transport[],
  topic: string,
): Promise<void> {
  checkTopic(topic)
  for (const t of transports) await t.unsubscribe?.(topic)
  await storage.delete(`topics/${topic}`)
  live.delete(topic)
}

/** The group of `topic`: its member list in storage, changed one update at a time. */
export function createGroup(
  storage: Storage,
  topic: string,
  publish: (topic: string, content: Content, o: PublishOptions) => Promise<PublishResult>,
): Group {
  checkTopic(topic)
  const key = `groups/${topic}`
  let updating: Promise<unknown> = Promise.resolve()
  const members = async (): Promise<string[]> => {
    const stored = await storage.get(key)
    return Array.isArray(stored) ? stored.filter((m): m is string => typeof m === 'string') : []
  }
  const change = (agents: string[], keep: (has: Set<string>, agent: string) => void) => {
    const ids = agents.map((a) => parseAgentId(a, 'agent').id)
    const run = updating.then(async () => {
      const has = new Set(await members())
      for (const id of ids) keep(has, id)
      await storage.put(key, [...has])
    })
    updating = run.catch(() => undefined)
    return run
  }
  return {
    topic,
    members,
    add: (...agents) => change(agents, (has, id) => void has.add(id)),
    remove: (...agents) => change(agents, (has, id) => void has.delete(id)),
    publish: async (content, o = {}) => publish(topic, content, { ...o, members: await members() }),
  }
}
