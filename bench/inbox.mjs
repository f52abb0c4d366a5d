/**
 * Inbox throughput over real HTTPS: the full PROFILE §6 pipeline (Content-Type, streaming size
 * check, strict I-JSON, validation, date window, did:key resolution, Ed25519 verification, rate
 * limits, replay and auth-level state, bounded queue) against two servers on the same TLS setup
 * in the same run: a bare node:https server answering 202, and one doing JSON.parse plus one raw
 * node:crypto verify with a reused KeyObject.
 *
 * Load comes from this process through a keep-alive https.Agent, `CONCURRENCY` requests in
 * flight, from `SENDERS` did:key senders (each key cached after first use), ~1 KB messages.
 * The per-address and per-sender limits are lifted (Infinity): one client address sending
 * thousands of messages a second is the load generator, not an abuser.
 *
 * Each server runs twice, in opposite orders, and the better run counts, so a load spike on a
 * shared machine hurts one run rather than one side of the comparison.
 *
 * Standalone (after `npm run build`): `node bench/inbox.mjs` (`BENCH_VERBOSE=1` prints every run).
 */
import { createPublicKey, verify as nodeVerify } from 'node:crypto'
import { Agent, createServer, request } from 'node:https'
import { pathToFileURL } from 'node:url'
import {
  buildSigningInput,
  createMessage,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  signMessage,
} from '@agentmsg/core'
import { didKeyResolver } from '@agentmsg/core/receive'
import { createDevCertificate } from '@agentmsg/dev-tls'
import { createInboxHandler } from '@agentmsg/transport-https'
import { serveHttps } from '@agentmsg/transport-https/node'
import { percentile, printTable } from './lib.mjs'

const SENDERS = 200
const CONCURRENCY = 32
const WARMUP = 1_000
const MEASURED = 6_000
const INBOX_PATH = '/.well-known/agentmsg/inbox'
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex')

/** Signed ~1 KB messages round-robin over the senders, each with what the baseline needs. */
async function workload(to, count) {
  const senders = await Promise.all(
    Array.from({ length: SENDERS }, async () => {
      const keys = await generateKeyPair()
      const id = didKeyFromPublicKey(keys.publicKey)
      const publicKey = createPublicKey({
        key: Buffer.concat([SPKI_PREFIX, keys.publicKey]),
        format: 'der',
        type: 'spki',
      })
      return { id, signer: ed25519Signer(keys), publicKey }
    }),
  )
  const text = 'Could you check the calendar for next week and propose two slots? '.repeat(2)
  const items = []
  for (let i = 0; i < count; i += 256) {
    const batch = Array.from({ length: Math.min(256, count - i) }, async (_, j) => {
      const sender = senders[(i + j) % SENDERS]
      const msg = createMessage({
        from: sender.id,
        to,
        conversationId: `c-${(i + j) % SENDERS}`,
        sequence: i + j,
        phase: 'request',
        ttlSeconds: 86_400,
        parts: [
          { type: 'text', text },
          { type: 'data', data: { slots: [{ start: '2026-11-23T09:00:00Z', minutes: 30 }] } },
        ],
      })
      const signed = await signMessage(msg, sender.signer)
      const sig = signed.security.signatures[0]
      const { sig: encoded, ...params } = sig
      return {
        body: Buffer.from(JSON.stringify(signed)),
        input: Buffer.from(buildSigningInput(signed, sig.signed_headers, true, params)),
        sig: Buffer.from(encoded, 'base64url'),
        publicKey: sender.publicKey,
        id: signed.message_id,
      }
    })
    items.push(...(await Promise.all(batch)))
  }
  return items
}

/** Send `items` with CONCURRENCY in flight over keep-alive connections; req/s and latencies. */
async function drive(url, items, ca) {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY, ca })
  const headers = { 'content-type': 'application/json', accept: 'application/json' }
  const one = (item) =>
    new Promise((resolve, reject) => {
      const req = request(
        url,
        { method: 'POST', agent, headers: { ...headers, 'content-length': item.body.length } },
        (res) => {
          res.resume()
          res.on('end', () => resolve(res.statusCode))
        },
      )
      req.on('error', reject)
      req.end(item.body)
    })
  const run = async (slice) => {
    const latencies = []
    let next = 0
    let bad = 0
    const worker = async () => {
      while (next < slice.length) {
        const item = slice[next++]
        const t0 = performance.now()
        const status = await one(item)
        latencies.push(performance.now() - t0)
        if (status !== 202) bad++
      }
    }
    const start = performance.now()
    await Promise.all(Array.from({ length: CONCURRENCY }, worker))
    const seconds = (performance.now() - start) / 1000
    latencies.sort((a, b) => a - b)
    return {
      rps: slice.length / seconds,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      bad,
    }
  }
  await run(items.slice(0, WARMUP))
  const result = await run(items.slice(WARMUP))
  agent.destroy()
  if (result.bad > 0) throw new Error(`${result.bad} requests to ${url} were not answered 202`)
  return result
}

/** A node:https server with the same TLS setup as serveHttps, running `answer(body)`. */
async function baselineServer(tls, answer) {
  const server = createServer({ ...tls, minVersion: 'TLSv1.2' }, (req, res) => {
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      const status = answer(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks))
      res.writeHead(status, { 'content-type': 'application/json' }).end('{"status":"accepted"}')
    })
  })
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `https://127.0.0.1:${server.address().port}${INBOX_PATH}`,
    close: () => {
      server.closeAllConnections()
      return new Promise((r) => server.close(r))
    },
  }
}

/** One measured run of the full inbox over serveHttps. */
async function inboxRun(tls, agentId, items) {
  let processed = 0
  const inbox = createInboxHandler({
    agentId,
    resolver: didKeyResolver(),
    onMessage: async () => {
      processed++
    },
    // Lifted for the load generator, see the top of this file.
    limits: {
      perAddress: { perMinute: Infinity },
      perSender: { perMinute: Infinity },
      maxQueue: 100_000,
    },
  })
  const server = await serveHttps(inbox, { tls })
  const result = await drive(server.url + INBOX_PATH, items, tls.ca)
  await server.close()
  if (processed !== items.length) throw new Error(`inbox processed ${processed} of ${items.length}`)
  return result
}

const best = (a, b) => (a.rps >= b.rps ? a : b)

export async function benchInbox() {
  // `ca` (the development CA) is what the load generator trusts.
  const { cert, key, ca } = await createDevCertificate()
  const tls = { cert, key, ca }
  const bob = didKeyFromPublicKey((await generateKeyPair()).publicKey)
  const count = WARMUP + MEASURED
  // The baselines may see a message twice; the inbox would answer a repeated id as a duplicate
  // without the work, so each of its runs gets messages of its own.
  const [shared, inboxFirst, inboxSecond] = await Promise.all([
    workload(bob, count),
    workload(bob, count),
    workload(bob, count),
  ])
  const bytes = shared[0].body.length

  const byId = new Map(shared.map((item) => [item.id, item]))
  const verifyOne = (body) => {
    const message = JSON.parse(body)
    const item = byId.get(message.message_id)
    const sig = Buffer.from(message.security.signatures[0].sig, 'base64url')
    return item && nodeVerify(null, item.input, item.publicKey, sig) ? 202 : 401
  }
  const baseline = async (answer) => {
    const server = await baselineServer(tls, answer)
    const result = await drive(server.url, shared, ca)
    await server.close()
    return result
  }
  const bare1 = await baseline(() => 202)
  const verify1 = await baseline(verifyOne)
  const inbox1 = await inboxRun(tls, bob, inboxFirst)
  const inbox2 = await inboxRun(tls, bob, inboxSecond)
  const verify2 = await baseline(verifyOne)
  const bare2 = await baseline(() => 202)
  if (process.env.BENCH_VERBOSE) console.log({ bare1, verify1, inbox1, inbox2, verify2, bare2 })
  const bareResult = best(bare1, bare2)
  const verifyResult = best(verify1, verify2)
  const inboxResult = best(inbox1, inbox2)

  const base = 'JSON.parse + node:crypto verify'
  return [
    {
      name: `inbox pipeline, ${bytes} B messages, ${SENDERS} senders, ${CONCURRENCY} in flight (best of 2)`,
      value: inboxResult.rps,
      unit: 'req/s',
      baseline: verifyResult.rps,
      baselineName: base,
      ratio: inboxResult.rps / verifyResult.rps,
      target: '≥ 1.0×',
    },
    {
      name: 'inbox pipeline vs a bare node:https 202',
      value: inboxResult.rps,
      unit: 'req/s',
      baseline: bareResult.rps,
      baselineName: 'bare node:https',
      ratio: inboxResult.rps / bareResult.rps,
      target: 'context',
    },
    {
      name: 'inbox p50 latency',
      value: inboxResult.p50,
      unit: 'ms',
      baseline: verifyResult.p50,
      baselineName: base,
      ratio: inboxResult.p50 / verifyResult.p50,
      target: 'context (lower is better)',
    },
    {
      name: 'inbox p99 latency',
      value: inboxResult.p99,
      unit: 'ms',
      baseline: verifyResult.p99,
      baselineName: base,
      ratio: inboxResult.p99 / verifyResult.p99,
      target: 'context (lower is better)',
    },
  ]
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printTable('inbox over HTTPS, full pipeline', await benchInbox())
}
