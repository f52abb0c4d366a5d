/**
 * Topic subscriptions on the agent's relays (PROFILE §9 pub/sub): one subscription per relay
 * and topic, its id kept in the transport's storage, so a restart neither repeats nor loses it.
 * What a topic subscription brings lands in the agent's mailbox, which `listen` streams.
 */
import { isAgentMsgError, type TransportComponents } from '@agentmsg/core'
import { relayCore } from './relay-core.js'
import { relayError } from './relay-error.js'
import type { RelayTransportOptions } from './relay-transport.js'

const topicKey = (relayUrl: string, topic: string) =>
  `topic/${encodeURIComponent(relayUrl)}/${topic}`

function clientFor(relayUrl: string, o: RelayTransportOptions, c: TransportComponents) {
  const { fetch, streamFetch, WebSocket, timeoutMs } = o
  return relayCore({
    relayUrl,
    agent: c.agentId,
    signer: c.signer,
    fetch,
    streamFetch,
    WebSocket,
    timeoutMs,
  })
}

/**
 * Subscribe on every relay, streamed to the mailbox or pushed to `webhook` (an inbox URL, which
 * the relay verifies and checks against its address policy); a relay that fails is reported and the others still subscribe.
 * @throws the first relay's error when none subscribed
 */
export async function subscribeTopic(
  relays: readonly string[],
  topic: string,
  o: RelayTransportOptions,
  c: TransportComponents,
  report: (error: unknown) => void,
  { signal, webhook }: { signal?: AbortSignal; webhook?: string } = {},
): Promise<void> {
  const failures: unknown[] = []
  for (const relayUrl of relays) {
    const key = topicKey(relayUrl, topic)
    if ((await c.storage.get(key)) !== undefined) continue
    try {
      const { subscriptionId } = await clientFor(relayUrl, o, c).subscribe({
        topics: [topic],
        signal,
        webhook,
      })
      await c.storage.put(key, subscriptionId)
    } catch (error) {
      failures.push(relayError(relayUrl, error))
    }
  }
  if (failures.length === relays.length && failures.length > 0) throw failures[0]
  for (const failure of failures) report(failure)
}

/** Delete the topic's subscription on every relay that has one (one the relay forgot is gone). */
export async function unsubscribeTopic(
  relays: readonly string[],
  topic: string,
  o: RelayTransportOptions,
  c: TransportComponents,
  signal?: AbortSignal,
): Promise<void> {
  for (const relayUrl of relays) {
    const key = topicKey(relayUrl, topic)
    const id = await c.storage.get(key)
    if (typeof id !== 'string') continue
    try {
      await clientFor(relayUrl, o, c).unsubscribe(id, { signal })
    } catch (error) {
      if (!isAgentMsgError(error) || error.code !== 'not_found') throw relayError(relayUrl, error)
    }
    await c.storage.delete(key)
  }
}
