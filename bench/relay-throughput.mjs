/**
 * Relay benchmark 3 (see bench/relay.mjs): durable publishes/s through the relay's HTTP
 * publish, `CONCURRENCY` publishers, direct messages to subscribed mailboxes.
 */

import { createAddressPolicy } from '@agentmsg/core/server'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import { createRelayClient } from '@agentmsg/transport-relay'
import { makeAgent, publisher, signedMessages, startRelay } from './relay-common.mjs'

export const CONCURRENCY = 256
const TP_SENDERS = 32
const TP_WARMUP = 1_000
const TP_MEASURED = 12_000
const TP_MAX_MS = 15_000

export async function benchThroughput(tls) {
  const { url, close } = await startRelay(tls)
  try {
    const policy = createAddressPolicy({ allow: ['127.0.0.1'] })
    const fetch = createNodeFetch({ ca: tls.ca, addressPolicy: policy, maxSockets: 32 })
    const recipients = await Promise.all(Array.from({ length: CONCURRENCY }, makeAgent))
    for (let i = 0; i < recipients.length; i += 32) {
      await Promise.all(
        recipients
          .slice(i, i + 32)
          .map((a) =>
            createRelayClient({ relayUrl: url, agent: a.id, signer: a.signer, fetch }).subscribe(),
          ),
      )
    }
    const senders = await Promise.all(Array.from({ length: TP_SENDERS }, makeAgent))
    const items = await signedMessages(
      senders,
      (i) => recipients[i % CONCURRENCY].id,
      TP_WARMUP + TP_MEASURED,
    )
    const pub = publisher(url, tls.ca, CONCURRENCY)
    const run = async (slice, maxMs) => {
      let next = 0
      let bad = 0
      const end = performance.now() + maxMs
      const worker = async () => {
        while (next < slice.length && performance.now() < end) {
          if ((await pub.send(slice[next++].body)) !== 202) bad++
        }
      }
      const start = performance.now()
      await Promise.all(Array.from({ length: CONCURRENCY }, worker))
      if (bad > 0) throw new Error(`throughput: ${bad} publishes not answered 202`)
      return { rps: (next * 1000) / (performance.now() - start), n: next }
    }
    await run(items.slice(0, TP_WARMUP), TP_MAX_MS)
    const result = await run(items.slice(TP_WARMUP), TP_MAX_MS)
    pub.close()
    return { ...result, bytes: items[0].body.length }
  } finally {
    await close()
  }
}
