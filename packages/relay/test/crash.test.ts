/**
 * Crash test (issue: "a child relay process takes a stream of publishes and is killed with
 * SIGKILL at a random point, several times; after restart every message that got a 202 is
 * retrievable, none twice").
 *
 * The relay runs as users run it: the built `agentmsg` bin in a child process, on SQLite in a
 * temp data dir, with `--dev-tls` (same dir and port across restarts, so the certificate is
 * reused). Each round starts the relay, drives concurrent publishers at one did:key mailbox,
 * and SIGKILLs the relay after a seeded random delay. A final restart retrieves the mailbox.
 *
 * The mailbox owner streams it over a WebSocket all along, without acknowledging (the relay
 * pushes before its commit, protocol decision 34), reconnecting from its last cursor after each
 * restart: every 202'd message reaches the stream, none twice.
 *
 * Reproduce a failure with CRASH_SEED=<seed printed in the output>.
 *
 * Publishers connect from distinct loopback source addresses (127.0.0.10…) and rotate sender
 * keys, so the relay's per-address (100 burst, 10/s) and per-sender (20 burst, 1/s) rate limits
 * do not turn the stream into a stream of 429s. A 429 is counted and is not a 202.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { Agent, request as httpsRequest } from 'node:https'
import { tmpdir } from 'node:os'
import path from 'node:path'
import {
  createMessage,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  type KeyPair,
  type Message,
  type Signer,
  signMessage,
} from '@agentmsg/core'
import { createKeyResolver } from '@agentmsg/core/identity'
import { signRequest, signWsAuth, verifyMessage } from '@agentmsg/core/receive'
import { createAddressPolicy } from '@agentmsg/core/server'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WebSocket as WsWebSocket } from 'ws'
import { seededRandom } from '../../conformance/test/support/seeded-random.js'
import {
  freePort,
  isRunning,
  killHard,
  type RelayProcess,
  requireBuiltCli,
  startRelayProcess,
} from './relay-process.js'

// Bounds (every loop has a cap; the whole test stays well under 90 s on a loaded 2-core box).
const ROUNDS = 5
const CONCURRENCY = 32
/** Publish attempts per round at most (the mailbox quota is 10,000 messages). */
const MAX_PUBLISHES_PER_ROUND = 1500
/** A sender key publishes at most this many messages (per-sender burst is 20). */
const MESSAGES_PER_KEY = 15
const KILL_DELAY_MIN_MS = 200
const KILL_DELAY_MAX_MS = 1500
/** Round 2+ re-sends this many ids that already got a 202. */
const RESENDS_PER_ROUND = 12
const REQUEST_TIMEOUT_MS = 15_000
const FIRST_ACK_TIMEOUT_MS = 15_000
const MAX_PAGES = 100
const PAGE_LIMIT = 500

type PublishOutcome = { status: number } | { error: string }

/** POST /relay/publish over its own agent (so over its own loopback source address). */
function publishRaw(agent: Agent, port: number, body: Buffer): Promise<PublishOutcome> {
  return new Promise((resolve) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path: '/relay/publish',
        method: 'POST',
        agent,
        timeout: REQUEST_TIMEOUT_MS,
        headers: { 'content-type': 'application/json', 'content-length': body.byteLength },
      },
      (res) => {
        const status = res.statusCode ?? 0
        res.resume()
        // The status line is what counts: a 202 was sent after the store resolved durably.
        res.on('error', () => undefined)
        resolve({ status })
      },
    )
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }))
    req.end(body)
  })
}

/** The owner's WebSocket stream, never acknowledging (the final retrieve reads everything). */
function ownerStream(
  port: number,
  ca: string,
  agent: string,
  signer: Signer,
  got: (id: string) => void,
) {
  const relayBaseUrl = `https://127.0.0.1:${port}`
  let after: string | undefined
  let ws: WsWebSocket | undefined
  let stopped = false
  const connect = () => {
    if (stopped) return
    const socket = new WsWebSocket(`wss://127.0.0.1:${port}/relay/ws`, { ca })
    ws = socket
    socket.on('message', (data) => {
      const frame = JSON.parse(String(data))
      if (frame.type === 'challenge') {
        const auth = { relayBaseUrl, nonce: frame.nonce, signer, agent, ...(after && { after }) }
        void signWsAuth(auth).then((a) => socket.send(JSON.stringify(a)))
      } else if (frame.type === 'message') {
        after = frame.cursor
        got(frame.message.message_id)
      }
    })
    socket.on('error', () => undefined)
    // Killed: again from the last cursor once the relay is back.
    socket.on('close', () => setTimeout(connect, 100))
  }
  connect()
  return {
    close() {
      stopped = true
      ws?.close()
    },
  }
}

interface Sent {
  from: string
  signature: string
  body: Buffer
}

let relay: RelayProcess | undefined
let dataDir: string

beforeAll(async () => {
  requireBuiltCli()
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentmsg-crash-'))
})

afterAll(async () => {
  if (relay && isRunning(relay)) {
    relay.child.kill('SIGKILL')
    await relay.exited
  }
  if (dataDir) await rm(dataDir, { recursive: true, force: true })
})

describe('relay crash (SIGKILL) durability', () => {
  it('keeps every 202-acknowledged publish across SIGKILLs, none twice', {
    timeout: 90_000,
  }, async () => {
    const seed = process.env.CRASH_SEED
      ? Number(process.env.CRASH_SEED)
      : (Date.now() ^ (process.pid << 8)) >>> 0
    console.log(`crash test seed: ${seed} (rerun with CRASH_SEED=${seed})`)
    const random = seededRandom(seed)
    const started = Date.now()

    const port = await freePort()
    const owner = await generateKeyPair()
    const mailbox = didKeyFromPublicKey(owner.publicKey)
    const ownerSigner = ed25519Signer(owner)

    const sent = new Map<string, Sent>() // every id ever put on the wire
    const acked = new Set<string>() // every id that got a 202
    const ackedList: string[] = []
    const perRound: Array<{
      round: number
      killAfterMs: number
      attempts: number
      acked: number
      rateLimited: number
      failed: number
      otherStatus: number
      resent: number
      resentAcked: number
    }> = []

    let ca = ''
    /** message_id → times the owner's stream got it. */
    const streamed = new Map<string, number>()
    let stream: ReturnType<typeof ownerStream> | undefined
    for (let round = 1; round <= ROUNDS; round++) {
      const r = await startRelayProcess(dataDir, port)
      relay = r
      ca ||= await readFile(r.certFile, 'utf8')
      const base = `https://127.0.0.1:${port}`

      if (round === 1) {
        // Open the mailbox once: signed POST /relay/subscribe.
        const fetch = createNodeFetch({
          ca,
          addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
        })
        const url = `${base}/relay/subscribe`
        const body = new TextEncoder().encode(JSON.stringify({ subscribe: { agent: mailbox } }))
        const headers = await signRequest({ method: 'POST', url, body, signer: ownerSigner })
        const res = await fetch(url, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body,
        })
        expect(res.status, await res.clone().text()).toBe(201)
        await res.text()
        stream = ownerStream(port, ca, mailbox, ownerSigner, (id) =>
          streamed.set(id, (streamed.get(id) ?? 0) + 1),
        )
      }

      const agents = Array.from(
        { length: CONCURRENCY },
        (_, i) =>
          new Agent({ ca, keepAlive: true, maxSockets: 1, localAddress: `127.0.0.${10 + i}` }),
      )
      const stats = {
        attempts: 0,
        acked: 0,
        rateLimited: 0,
        failed: 0,
        otherStatus: 0,
        resent: 0,
        resentAcked: 0,
      }
      const otherStatuses = new Map<number, number>()
      let killed = false
      let firstAck!: () => void
      const firstAckSeen = new Promise<void>((resolve) => (firstAck = resolve))

      // Re-sends of ids that already got a 202 (rounds 2+), interleaved at the head of the stream.
      const resends: string[] = []
      if (round > 1) {
        for (let i = 0; i < RESENDS_PER_ROUND && ackedList.length > 0; i++) {
          resends.push(ackedList[Math.floor(random() * ackedList.length)]!)
        }
      }

      const worker = async (w: number) => {
        let keys: KeyPair | undefined
        let used = MESSAGES_PER_KEY
        while (!killed && stats.attempts < MAX_PUBLISHES_PER_ROUND) {
          const resendId = resends.pop()
          let id: string
          let body: Buffer
          if (resendId !== undefined) {
            id = resendId
            body = sent.get(id)!.body
            stats.resent++
          } else {
            if (used >= MESSAGES_PER_KEY) {
              keys = await generateKeyPair()
              used = 0
            }
            used++
            const from = didKeyFromPublicKey(keys!.publicKey)
            const message = await signMessage(
              createMessage({
                from,
                to: mailbox,
                conversationId: `crash-${round}-${w}`,
                sequence: used - 1,
                phase: 'greeting',
                text: `round ${round} worker ${w} #${stats.attempts}`,
              }),
              ed25519Signer(keys!),
            )
            id = message.message_id
            body = Buffer.from(JSON.stringify(message))
            sent.set(id, { from, signature: message.security!.signatures[0]!.sig, body })
          }
          stats.attempts++
          const outcome = await publishRaw(agents[w]!, port, body)
          if ('status' in outcome && outcome.status === 202) {
            if (resendId !== undefined) stats.resentAcked++
            else {
              stats.acked++
              acked.add(id)
              ackedList.push(id)
              firstAck()
            }
          } else if ('status' in outcome) {
            if (outcome.status === 429) stats.rateLimited++
            else {
              stats.otherStatus++
              otherStatuses.set(outcome.status, (otherStatuses.get(outcome.status) ?? 0) + 1)
            }
            if (resendId !== undefined && !killed)
              throw new Error(`re-send of ${id} got ${outcome.status}`)
          } else {
            stats.failed++
            // A connection error before the kill is a relay failure, not the crash.
            if (!killed)
              throw new Error(`publish failed before the kill: ${outcome.error}\n${r.output()}`)
          }
        }
      }

      const killAfterMs = Math.round(
        KILL_DELAY_MIN_MS + random() * (KILL_DELAY_MAX_MS - KILL_DELAY_MIN_MS),
      )
      const killer = (async () => {
        // The random delay runs from the round's first 202 of a new message (not a re-send), so
        // every round acknowledges something and is killed mid-stream.
        let t: ReturnType<typeof setTimeout> | undefined
        await Promise.race([
          firstAckSeen,
          new Promise((_, reject) => {
            t = setTimeout(
              () => reject(new Error(`no 202 within ${FIRST_ACK_TIMEOUT_MS} ms in round ${round}`)),
              FIRST_ACK_TIMEOUT_MS,
            )
          }),
        ]).finally(() => clearTimeout(t))
        await new Promise((resolve) => setTimeout(resolve, killAfterMs))
        killed = true
        await killHard(r)
      })()
      const workers = Array.from({ length: CONCURRENCY }, (_, w) => worker(w))
      try {
        await Promise.all([killer, ...workers])
      } finally {
        killed = true
        if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL')
        await r.exited
        for (const a of agents) a.destroy()
      }
      relay = undefined
      expect(
        otherStatuses.size,
        `unexpected statuses ${JSON.stringify([...otherStatuses])}\n${r.output()}`,
      ).toBe(0)
      perRound.push({ round, killAfterMs, ...stats })
      console.log(
        `round ${round}: SIGKILL ${killAfterMs} ms after the first 202; ${stats.attempts} publishes, ` +
          `${stats.acked} acknowledged (202), ${stats.rateLimited} rate-limited, ${stats.failed} cut by the kill; ` +
          `${stats.resent} re-sends of acknowledged ids (${stats.resentAcked} got 202)`,
      )
    }

    // Restart once more and read the whole mailbox, page by page.
    const r = await startRelayProcess(dataDir, port)
    relay = r
    // The stream gets everything acknowledged, within a bound.
    const unstreamed = () => [...acked].filter((id) => !streamed.has(id))
    for (let i = 0; i < 300 && unstreamed().length > 0; i++)
      await new Promise((f) => setTimeout(f, 50))
    expect(unstreamed(), `acknowledged, never streamed (seed ${seed})`).toEqual([])
    stream!.close()
    const twice = [...streamed].filter(([, n]) => n > 1).map(([id]) => id)
    expect(twice, `streamed twice (seed ${seed})`).toEqual([])
    const fetch = createNodeFetch({
      ca,
      addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
    })
    const retrieved: Message[] = []
    let after: string | undefined
    let pages = 0
    for (; pages < MAX_PAGES; pages++) {
      const url = new URL(`https://127.0.0.1:${port}/relay/messages`)
      url.searchParams.set('agent', mailbox)
      if (after !== undefined) url.searchParams.set('after', after)
      url.searchParams.set('limit', String(PAGE_LIMIT))
      const headers = await signRequest({ method: 'GET', url: url.href, signer: ownerSigner })
      const res = await fetch(url.href, { headers })
      const text = await res.text()
      expect(res.status, text).toBe(200)
      const page = JSON.parse(text) as { messages: Message[]; cursor: string | null }
      if (page.messages.length === 0) break
      retrieved.push(...page.messages)
      expect(page.cursor, 'a non-empty page advances the cursor').not.toBe(after ?? null)
      after = page.cursor ?? undefined
    }
    expect(pages, 'paging ended within the page cap').toBeLessThan(MAX_PAGES)

    // Every 202'd id is there; no (from, message_id) twice; nothing that was never sent.
    const seen = new Set<string>()
    const seenIds = new Set<string>()
    const resolver = createKeyResolver()
    for (const m of retrieved) {
      const key = `${m.from.agent}\n${m.message_id}`
      expect(seen.has(key), `(from, message_id) stored twice: ${m.message_id}`).toBe(false)
      seen.add(key)
      seenIds.add(m.message_id)
      const origin = sent.get(m.message_id)
      expect(origin, `retrieved a message that was never sent: ${m.message_id}`).toBeDefined()
      expect(m.from.agent).toBe(origin!.from)
      expect(m.security?.signatures[0]?.sig).toBe(origin!.signature)
      expect(m.trace?.received, `trace of ${m.message_id}`).toHaveLength(1)
      expect(m.trace!.received[0]!.from).toBe(m.from.agent)
      const verdict = await verifyMessage(m, resolver)
      expect(verdict.signatures.some((s) => s.alg === 'ed25519')).toBe(true)
    }
    const missing = [...acked].filter((id) => !seenIds.has(id))
    expect(missing, `acknowledged but lost after SIGKILL (seed ${seed})`).toEqual([])

    const totalAcked = acked.size
    const storedUnacked = retrieved.length - totalAcked
    console.log(
      `crash test (seed ${seed}): ${ROUNDS} SIGKILLs; acknowledged per round ` +
        `[${perRound.map((p) => p.acked).join(', ')}], total ${totalAcked}; ` +
        `re-sent ${perRound.reduce((n, p) => n + p.resent, 0)} acknowledged ids; ` +
        `retrieved ${retrieved.length} in ${pages} page(s) (${storedUnacked} stored whose 202 was cut by the kill), ` +
        `streamed ${streamed.size} (${streamed.size - totalAcked} without a 202), ` +
        `0 duplicates, 0 lost; ${((Date.now() - started) / 1000).toFixed(1)} s`,
    )
    expect(totalAcked).toBeGreaterThanOrEqual(ROUNDS)
    expect(perRound.reduce((n, p) => n + p.resentAcked, 0)).toBeGreaterThan(0)

    const exited = r.exited
    r.child.kill('SIGTERM')
    expect((await exited).code).toBe(0)
    relay = undefined
  })
})
