/**
 * The relay's spans, with the OpenTelemetry SDK registered (in-memory exporter, AsyncLocalStorage
 * context, W3C propagator): a span per request that joins the client's trace (`traceparent`),
 * labelled as the Prometheus metrics are, so a trace and a dashboard name an answer alike; and
 * a span per webhook push, whose trace context the webhook receives. Real HTTPS relay on
 * loopback, scraped over HTTP.
 */
import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { SpanStatusCode } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { describe, expect, it } from 'vitest'
import { traceToMemory } from '../../../test/setup/trace-to-memory.js'
import { relayPerTest, testCertificate, until } from './helpers.js'

const exporter = traceToMemory()
const { start, defer } = relayPerTest()

/** Samples of a text exposition: `name{label="v",…}` → value (comments skipped). */
async function scrape(url: string): Promise<Map<string, number>> {
  const samples = new Map<string, number>()
  for (const line of (await (await fetch(url)).text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const space = line.lastIndexOf(' ')
    samples.set(line.slice(0, space), Number(line.slice(space + 1)))
  }
  return samples
}

/** Each `metric{label="value"}` sample, non-zero, as label value → count. */
function byLabel(samples: Map<string, number>, metric: string, label: string) {
  const counts: Record<string, number> = {}
  const pattern = new RegExp(`^agentmsg_relay_${metric}\\{${label}="([a-z_]+)"\\}$`)
  for (const [key, n] of samples) {
    const value = pattern.exec(key)?.[1]
    if (value !== undefined && n > 0) counts[value] = n
  }
  return counts
}

/** The relay spans named `name`, counted by an attribute (those that have it). */
function spansBy(spans: ReadableSpan[], name: string, attribute: string) {
  const counts: Record<string, number> = {}
  for (const s of spans) {
    const value = s.attributes[attribute]
    if (s.name === name && value !== undefined)
      counts[String(value)] = (counts[String(value)] ?? 0) + 1
  }
  return counts
}

const JSON_TYPE = { 'content-type': 'application/json' }
const hex = (bytes: number) => randomBytes(bytes).toString('hex')

describe('relay spans', () => {
  it('join the publisher’s trace and carry the labels the metrics count', async () => {
    exporter.reset()
    const r = await start({
      metrics: { port: 0 },
      limits: { perSender: { perMinute: 1, burst: 3 } },
    })
    const alice = await fixtureAgent()
    const bob = await fixtureAgent()
    await r.client.subscribe(bob)

    // A publisher's trace context: the relay's span is its child.
    const [traceId, parentId] = [hex(16), hex(8)]
    const first = await signedMessage(alice, bob.id)
    const traced = await r.client.publish(first, { traceparent: `00-${traceId}-${parentId}-01` })
    expect(traced.status).toBe(202)
    // Then one of each answer: accepted, duplicate, a forged signature, not a message, rate limited.
    const statuses = [202]
    const publish = async (message: unknown) =>
      statuses.push((await r.client.publish(message)).status)
    await publish(await signedMessage(alice, bob.id))
    await publish(first)
    const forged = await signedMessage(alice, bob.id)
    forged.security!.signatures[0]!.sig = first.security!.signatures[0]!.sig
    await publish(forged)
    await publish({ not: 'a message' })
    await publish(await signedMessage(alice, bob.id))
    await publish(await signedMessage(alice, bob.id))
    expect(statuses).toEqual([202, 202, 202, 401, 400, 202, 429])

    const spans = exporter.getFinishedSpans()
    // The relay's request span, and core's receive pipeline inside it.
    const joined = spans.filter((s) => s.spanContext().traceId === traceId)
    expect(joined.map((s) => s.name).sort()).toEqual(['agentmsg.receive', 'agentmsg.relay.publish'])
    const [received, request] = joined.sort((a, b) => a.name.localeCompare(b.name))
    expect(request!.parentSpanContext?.spanId).toBe(parentId)
    expect(request!.attributes).toMatchObject({ 'agentmsg.relay.code': 'accepted' })
    expect(received!.parentSpanContext?.spanId).toBe(request!.spanContext().spanId)

    const m = await scrape(r.metrics!.url)
    const publishes = byLabel(m, 'publishes_total', 'code')
    expect(publishes).toEqual({
      accepted: 3,
      duplicate: 1,
      invalid_signature: 1,
      invalid_format: 1,
      rate_limited: 1,
    })
    expect(spansBy(spans, 'agentmsg.relay.publish', 'agentmsg.relay.code')).toEqual(publishes)
    const authFailures = byLabel(m, 'auth_failures_total', 'code')
    expect(authFailures).toEqual({ invalid_signature: 1 })
    const refusedAuth = spans.filter((s) => {
      const status = s.attributes['http.response.status_code']
      return s.name.startsWith('agentmsg.relay.') && (status === 401 || status === 403)
    })
    expect(spansBy(refusedAuth, 'agentmsg.relay.publish', 'agentmsg.relay.code')).toEqual(
      authFailures,
    )
    // Every request span is named by its route, as the log line names it; its status is the answer's.
    const names = spans.map((s) => s.name).filter((n) => n.startsWith('agentmsg.relay.'))
    expect(names.sort()).toEqual([
      ...Array(7).fill('agentmsg.relay.publish'),
      'agentmsg.relay.subscribe',
    ])
    expect(spansBy(spans, 'agentmsg.relay.publish', 'http.response.status_code')).toEqual({
      202: 4,
      400: 1,
      401: 1,
      429: 1,
    })
  })

  it('each webhook push attempt is a span whose trace context the webhook receives', async () => {
    exporter.reset()
    const r = await start({ metrics: { port: 0 }, webhook: { random: () => 0 } })
    const cert = await testCertificate()
    const alice = await fixtureAgent()
    const bob = await fixtureAgent()
    // The traceparent of each push: the first answered 500, the retry 202.
    const pushed: Array<string | undefined> = []
    const hook: Server = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>
        const verify = body.type === 'webhook_verify'
        if (!verify) pushed.push(req.headers.traceparent as string | undefined)
        res.writeHead(verify ? 200 : pushed.length === 1 ? 500 : 202, JSON_TYPE)
        res.end(JSON.stringify(verify ? { challenge: body.challenge } : {}))
      })
    })
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve))
    defer(() => new Promise<void>((resolve) => hook.close(() => resolve())))
    const url = `https://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`
    await r.client.subscribe(bob, { push: { mode: 'webhook', url } })
    expect((await r.client.publish(await signedMessage(alice, bob.id))).status).toBe(202)
    await until(
      async () => byLabel(await scrape(r.metrics!.url), 'deliveries_total', 'mode').webhook === 1,
    )

    const pushes = exporter.getFinishedSpans().filter((s) => s.name === 'agentmsg.relay.push')
    expect(pushes).toHaveLength(2)
    expect(pushed).toHaveLength(2)
    for (const [i, push] of pushes.entries()) {
      // A trace of its own, not the publish's nor the subscribe's: the feed serves the mailbox.
      expect(push.parentSpanContext).toBeUndefined()
      const { traceId, spanId } = push.spanContext()
      expect(pushed[i]).toBe(`00-${traceId}-${spanId}-01`)
      expect(push.attributes['agentmsg.relay.mode']).toBe('webhook')
    }
    // The failed attempt: the webhook's status and the code PROFILE §6 gives it (500).
    expect(pushes[0]!.status.code).toBe(SpanStatusCode.ERROR)
    expect(pushes[0]!.attributes).toMatchObject({
      'http.response.status_code': 500,
      'error.type': 'internal_error',
    })
    expect(pushes[1]!.status.code).toBe(SpanStatusCode.UNSET)
  })
})
