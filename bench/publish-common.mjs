/**
 * What every publishing benchmark shares, in one process (relay-common.mjs) or across
 * processes (proc/workload.mjs, proc/publisher.mjs): ~1 KB signed direct messages, padded to a
 * target size, and the keep-alive HTTPS POST that sends one body. Only `@agentmsg/core` and
 * node:https, so the publisher process loads nothing else.
 */
import { request } from 'node:https'
import { createMessage, signMessage } from '@agentmsg/core'

const SENTENCE = 'Could you check the calendar for next week and propose two slots? '

/** Message `i` from `sender` to `to(i)`, signed; its one text part is `text`. */
function signOne(sender, to, i, conversations, text) {
  return signMessage(
    createMessage({
      from: sender.id,
      to: to(i),
      conversationId: `c-${i % conversations}`,
      sequence: i,
      phase: 'request',
      ttlSeconds: 86_400,
      parts: [{ type: 'text', text }],
    }),
    sender.signer,
  )
}

/** How much text makes message 0 of this workload about `bytes` bytes of JSON. */
export async function padLengthFor(senders, to, bytes) {
  const probe = Buffer.byteLength(JSON.stringify(await signOne(senders[0], to, 0, 1, '')))
  return Math.max(0, bytes - probe)
}

/**
 * `count` messages padded with `padLength` characters of text, round-robin over `senders`
 * (agents `{id, signer}`), to `to(i)`; each becomes `shape(signed, sender)`. Signed 256 at a
 * time so the batch's promises stay few.
 */
export async function signRoundRobin(senders, to, count, padLength, shape) {
  const text = SENTENCE.repeat(Math.ceil(padLength / SENTENCE.length)).slice(0, padLength)
  const out = []
  for (let i = 0; i < count; i += 256) {
    const batch = Array.from({ length: Math.min(256, count - i) }, async (_, j) => {
      const sender = senders[(i + j) % senders.length]
      return shape(await signOne(sender, to, i + j, senders.length, text), sender)
    })
    out.push(...(await Promise.all(batch)))
  }
  return out
}

/**
 * POST the JSON `body` to `target` over the keep-alive `agent`; resolves the status code once
 * the answer was read. A request error rejects, or resolves `errorStatus` when one is given
 * (the publisher process counts failures instead of stopping).
 */
export function postJson(target, agent, body, errorStatus) {
  return new Promise((resolve, reject) => {
    const req = request(
      target,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'content-length': body.length,
        },
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode))
      },
    )
    req.on('error', (error) => (errorStatus === undefined ? reject(error) : resolve(errorStatus)))
    req.end(body)
  })
}
