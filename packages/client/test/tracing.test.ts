/**
 * OpenTelemetry end to end: with the SDK registered (a BasicTracerProvider exporting to memory,
 * the AsyncLocalStorage context manager, the W3C propagator) and `@opentelemetry/api` found by
 * the packages themselves (nothing hands it in), a send and the HTTP hop it makes are one
 * trace: through a relay, up to the relay's publish span; directly, up to the inbox's receive
 * span. Real agents, a real relay and inbox over TLS on loopback. The trace context rides in
 * the request's headers only: the signed message bytes carry none of it.
 */
import { memoryStorage } from '@agentmsg/core'
import { SpanKind } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { traceToMemory } from '../../../test/setup/trace-to-memory.js'
import { createNodeAgent, type NodeAgent, type NodeAgentOptions } from '../src/node.js'
import { collect, createEnv, type Env, freePort, removeTempDirs, startRelay } from './helpers.js'

const exporter = traceToMemory()
let env: Env
const open: Array<{ close(): Promise<void> }> = []

beforeAll(async () => {
  env = await createEnv()
})
afterEach(async () => {
  await Promise.all(open.splice(0).map((a) => a.close()))
  exporter.reset()
})
afterAll(async () => {
  await removeTempDirs()
})

/** The requests an agent's fetch made, as sent. */
type Sent = { url: string; headers: Headers; body: string }

async function agent(options: NodeAgentOptions, sent?: Sent[]): Promise<NodeAgent> {
  const recording: typeof fetch = async (input, init) => {
    const body = init?.body
    if (sent && body != null) {
      const text = typeof body === 'string' ? body : new TextDecoder().decode(body as Uint8Array)
      sent.push({ url: String(input), headers: new Headers(init?.headers), body: text })
    }
    return env.fetch(input, init)
  }
  const a = await createNodeAgent({
    fetch: recording,
    streamFetch: env.streamFetch,
    storage: memoryStorage(),
    ...options,
  })
  open.push(a)
  return a
}

/** The finished span named `name` of trace `traceId` (exactly one). */
function span(name: string, traceId: string): ReadableSpan {
  const found = exporter
    .getFinishedSpans()
    .filter((s) => s.name === name && s.spanContext().traceId === traceId)
  expect(found.map((s) => s.name)).toEqual([name])
  return found[0]!
}

/** Resolves once `name` has ended in trace `traceId`. */
async function ended(name: string, traceId: string): Promise<ReadableSpan> {
  for (let i = 0; i < 200; i++) {
    const spans = exporter.getFinishedSpans()
    if (spans.some((s) => s.name === name && s.spanContext().traceId === traceId)) break
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  return span(name, traceId)
}

const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId
const idOf = (s: ReadableSpan) => s.spanContext().spanId

/** The send span of message `messageId` and its delivery attempt, which it parents. */
function sendSpans(messageId: string) {
  const send = exporter
    .getFinishedSpans()
    .find((s) => s.name === 'agentmsg.send' && s.attributes['messaging.message.id'] === messageId)
  expect(send?.kind).toBe(SpanKind.PRODUCER)
  const traceId = send!.spanContext().traceId
  const deliver = span('agentmsg.deliver', traceId)
  expect(deliver.kind).toBe(SpanKind.CLIENT)
  expect(parentOf(deliver)).toBe(idOf(send!))
  return { send: send!, deliver, traceId }
}

/** The HTTP request that carried the message: trace context in its headers, none in its body. */
function checkHop(requests: Sent[], messageId: string, traceId: string, parent: ReadableSpan) {
  const hop = requests.filter((r) => r.body.includes(messageId))
  expect(hop).toHaveLength(1)
  const { headers, body } = hop[0]!
  expect(headers.get('traceparent')).toBe(`00-${traceId}-${idOf(parent)}-01`)
  // The signed message: no `trace` member, nothing of the trace context anywhere in its bytes.
  const signed = JSON.parse(body) as Record<string, unknown>
  expect(signed.message_id).toBe(messageId)
  expect(Object.keys(signed)).not.toContain('trace')
  expect(body).not.toContain(traceId)
  expect(body).not.toContain(idOf(parent))
  expect(body.toLowerCase()).not.toContain('traceparent')
}

describe('OpenTelemetry across the HTTP hop', () => {
  it('a send through a relay and the relay’s publish span are one trace', async () => {
    const relay = await startRelay(env)
    open.push(relay)
    const requests: Sent[] = []
    const bob = await agent({ relays: [relay.url] })
    const alice = await agent({ relays: [relay.url] }, requests)
    const atBob = collect(bob, 'message')

    const sent = await alice.send(bob.id, 'through the relay', { relays: [relay.url] })
    expect(sent).toMatchObject({ route: 'relay', relayUrl: relay.url })
    expect((await atBob.nth(1)).text).toBe('through the relay')

    const { deliver, traceId } = sendSpans(sent.messageId)
    expect(deliver.attributes['agentmsg.route']).toBe('relay')
    // The relay's span continues the attempt's: its parent is the span the traceparent named.
    const publish = await ended('agentmsg.relay.publish', traceId)
    expect(publish.kind).toBe(SpanKind.SERVER)
    expect(parentOf(publish)).toBe(idOf(deliver))
    expect(publish.attributes).toMatchObject({
      'agentmsg.relay.code': 'accepted',
      'http.response.status_code': 202,
    })
    // Core's receive pipeline, run by the relay, inside it.
    const received = span('agentmsg.receive', traceId)
    expect(parentOf(received)).toBe(idOf(publish))
    expect(received.attributes['agentmsg.receive.outcome']).toBe('accepted')
    checkHop(requests, sent.messageId, traceId, deliver)
  })

  it('a direct send and the inbox’s receive span are one trace', async () => {
    const port = await freePort()
    const bob = await agent({
      identity: { agentId: `https://127.0.0.1:${port}` },
      inbox: { port, tls: { cert: env.cert.cert, key: env.cert.key } },
    })
    const requests: Sent[] = []
    const alice = await agent({}, requests)
    const atBob = collect(bob, 'message')

    const sent = await alice.send(bob.id, 'straight to the inbox')
    expect(sent).toMatchObject({ route: 'direct', transport: 'https' })
    expect((await atBob.nth(1)).text).toBe('straight to the inbox')

    const { deliver, traceId } = sendSpans(sent.messageId)
    expect(deliver.attributes['agentmsg.route']).toBe('direct')
    const inbox = await ended('agentmsg.inbox', traceId)
    expect(inbox.kind).toBe(SpanKind.SERVER)
    expect(parentOf(inbox)).toBe(idOf(deliver))
    expect(inbox.attributes['http.response.status_code']).toBe(202)
    const received = span('agentmsg.receive', traceId)
    expect(parentOf(received)).toBe(idOf(inbox))
    expect(received.attributes['agentmsg.receive.outcome']).toBe('accepted')
    checkHop(requests, sent.messageId, traceId, deliver)
  })
})
