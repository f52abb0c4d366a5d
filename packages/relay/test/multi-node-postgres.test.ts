/**
 * Issue 13: three relay processes on one PostgreSQL, one killed with SIGKILL mid-stream, a few
 * rounds; nothing acknowledged is lost and nothing is delivered twice.
 *
 * The relays run as operators run them: the built `agentmsg relay --store postgres://…` in
 * child processes, each with its own port and data directory (its --dev-tls certificate, issued
 * by the machine's dev CA) and one shared schema. Publishers spread topic messages over every
 * live node; two subscribers stream from different nodes (one WebSocket, one SSE). Each round
 * SIGKILLs one node at a random point: a subscriber's node in the first two rounds, a
 * publish-only node in the third. A subscriber whose node died reconnects to another node with
 * the cursor it had (cursors mean the same on every node); the killed node is restarted.
 * At the end every publish that got a 202 must have reached each subscriber exactly once.
 *
 * Reproduce a failure with MULTI_NODE_SEED=<seed printed in the output>.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import {
  createMessage,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  type KeyPair,
  signMessage,
} from '@agentmsg/core'
import { createAddressPolicy } from '@agentmsg/core/server'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import {
  createRelayClient,
  type RelayClient,
  type StreamHandle,
  type StreamMode,
  type WebSocketConstructor,
} from '@agentmsg/transport-relay'
import { afterAll, describe, expect, it } from 'vitest'
import { WebSocket as WsWebSocket } from 'ws'
import { seededRandom } from '../../conformance/test/support/seeded-random.js'
import { dropPostgresSchema, freshPostgresSchema, POSTGRES_TEST_URL } from './postgres-helpers.js'
import {
  freePort,
  isRunning,
  killHard,
  type RelayProcess,
  requireBuiltCli,
  startRelayProcess,
} from './relay-process.js'

const NODES = 3
const ROUNDS = 3
const PUBLISHERS = 12
/** Publishes per round at most; the kill lands after KILL_AFTER_ACKS_MIN…MAX 202s. */
const MAX_PUBLISHES_PER_ROUND = 400
const KILL_AFTER_ACKS_MIN = 40
const KILL_AFTER_ACKS_MAX = 200
const TOPIC = 'multi-node/test'
/** How long the subscribers get, after the last round, to receive everything acknowledged. */
const DELIVERY_DEADLINE_MS = 30_000

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Node {
  index: number
  port: number
  dataDir: string
  process: RelayProcess | undefined
}

/** A subscriber: one agent streaming its mailbox from one node at a time. */
interface Subscriber {
  name: string
  mode: StreamMode
  keys: KeyPair
  agent: string
  node: Node
  handle: StreamHandle | undefined
  /** message_id → times the handler got it. */
  deliveries: Map<string, number>
  reconnects: number
}

const nodes: Node[] = []
const schema = freshPostgresSchema()

afterAll(async () => {
  for (const node of nodes) {
    if (node.process && isRunning(node.process)) {
      node.process.child.kill('SIGKILL')
      await node.process.exited
    }
    await rm(node.dataDir, { recursive: true, force: true })
  }
  if (POSTGRES_TEST_URL !== undefined) await dropPostgresSchema(POSTGRES_TEST_URL, schema)
})

describe.runIf(POSTGRES_TEST_URL !== undefined)('relay nodes on one PostgreSQL', () => {
  it('deliver every 202-acknowledged publish to each subscriber exactly once across SIGKILLs', {
    timeout: 240_000,
  }, async () => {
    requireBuiltCli()
    const url = POSTGRES_TEST_URL!
    const seed = process.env.MULTI_NODE_SEED
      ? Number(process.env.MULTI_NODE_SEED)
      : (Date.now() ^ (process.pid << 8)) >>> 0
    console.log(`multi-node test seed: ${seed} (rerun with MULTI_NODE_SEED=${seed})`)
    const random = seededRandom(seed)

    const flags = [
      ...['--store', url, '--store-schema', schema],
      // One machine drives the load from one address with many senders.
      ...['--rate-limit', 'unlimited', '--sender-rate-limit', 'unlimited'],
      ...['--max-reads-per-address', '64'],
    ]
    const start = async (node: Node) => {
      node.process = await startRelayProcess(node.dataDir, node.port, flags)
    }
    for (let i = 0; i < NODES; i++) {
      const dataDir = await mkdtemp(path.join(tmpdir(), `agentmsg-node${i}-`))
      nodes.push({ index: i, port: await freePort(), dataDir, process: undefined })
    }
    // The first start migrates the schema; the others start together on it.
    await start(nodes[0]!)
    await Promise.all(nodes.slice(1).map(start))
    const ca = await readFile(nodes[0]!.process!.certFile, 'utf8')
    const live = () => nodes.filter((n) => n.process !== undefined && isRunning(n.process))
    const base = (node: Node) => `https://127.0.0.1:${node.port}`

    const addressPolicy = createAddressPolicy({ allow: ['127.0.0.1'] })
    const fetch = createNodeFetch({ ca, addressPolicy, timeoutMs: 15_000 })
    const streamFetch = createNodeFetch({ ca, addressPolicy, timeoutMs: 0 })
    const WebSocket = class extends WsWebSocket {
      constructor(address: string, _protocols?: undefined, options?: object) {
        super(address, { ...options, ca })
      }
    } as unknown as WebSocketConstructor
    const clientOf = (s: Subscriber, node: Node): RelayClient =>
      createRelayClient({
        relayUrl: base(node),
        agent: s.agent,
        signer: ed25519Signer(s.keys),
        fetch,
        streamFetch,
        WebSocket,
      })

    const subscribers: Subscriber[] = []
    for (const [name, mode, node] of [
      ['ws-subscriber', 'ws', nodes[1]!],
      ['sse-subscriber', 'sse', nodes[2]!],
    ] as const) {
      const keys = await generateKeyPair()
      const s: Subscriber = {
        name,
        mode,
        keys,
        agent: didKeyFromPublicKey(keys.publicKey),
        node,
        handle: undefined,
        deliveries: new Map(),
        reconnects: 0,
      }
      // Subscribed through node 0: the subscription is the database's, every node knows it.
      await clientOf(s, nodes[0]!).subscribe({ topics: [TOPIC] })
      subscribers.push(s)
    }
    const stream = (s: Subscriber, after: string | undefined) => {
      s.handle = clientOf(s, s.node).stream(
        (entry) => {
          const id = entry.messageId ?? `(unreadable at ${entry.cursor})`
          s.deliveries.set(id, (s.deliveries.get(id) ?? 0) + 1)
        },
        {
          mode: s.mode,
          ...(after !== undefined ? { after } : {}),
          // Reconnects to a dead node are expected between the kill and the move.
          onError: () => undefined,
          backoff: { baseMs: 50, capMs: 500 },
        },
      )
    }
    for (const s of subscribers) stream(s, undefined)

    /** Move a subscriber whose node died to another live node, resuming from its cursor. */
    const move = async (s: Subscriber) => {
      const old = s.handle!
      await old.close()
      const others = live().filter((n) => n !== s.node)
      s.node = others[Math.floor(random() * others.length)]!
      s.reconnects++
      stream(s, old.cursor)
    }

    const acked = new Set<string>()
    const counts = { attempts: 0, acked: 0, failed: 0, other: new Map<number, number>() }
    let sequence = 0
    for (let round = 1; round <= ROUNDS; round++) {
      // Rounds 1 and 2 kill a subscriber's node; round 3 a node no subscriber streams from.
      const victim =
        round <= 2
          ? subscribers[round - 1]!.node
          : live().find((n) => subscribers.every((s) => s.node !== n))!
      const killAfter = Math.round(
        KILL_AFTER_ACKS_MIN + random() * (KILL_AFTER_ACKS_MAX - KILL_AFTER_ACKS_MIN),
      )
      const roundStart = counts.acked
      let attempts = 0
      let killed: Promise<void> | undefined
      const publisher = async (p: number) => {
        const keys = await generateKeyPair()
        const from = didKeyFromPublicKey(keys.publicKey)
        const signer = ed25519Signer(keys)
        while (attempts < MAX_PUBLISHES_PER_ROUND) {
          attempts++
          counts.attempts++
          const targets = live()
          const node = targets[(p + attempts) % targets.length]!
          const message = await signMessage(
            createMessage({
              from,
              to: { topic: TOPIC },
              conversationId: `multi-node-${p}`,
              sequence: sequence++,
              phase: 'greeting',
              text: `round ${round} publisher ${p}`,
            }),
            signer,
          )
          let status: number | undefined
          try {
            const res = await fetch(`${base(node)}/relay/publish`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify(message),
            })
            status = res.status
            await res.arrayBuffer()
          } catch {
            counts.failed++ // the node died under this publish: no 202, nothing promised
          }
          if (status === 202) {
            acked.add(message.message_id)
            counts.acked++
            if (killed === undefined && counts.acked - roundStart >= killAfter) {
              killed = killHard(victim.process!)
            }
          } else if (status !== undefined) {
            counts.other.set(status, (counts.other.get(status) ?? 0) + 1)
          }
        }
      }
      await Promise.all(Array.from({ length: PUBLISHERS }, (_, p) => publisher(p)))
      expect(killed, `round ${round}: fewer than ${killAfter} publishes acknowledged`).toBeDefined()
      await killed
      for (const s of subscribers) if (s.node === victim) await move(s)
      console.log(
        `round ${round}: SIGKILL node ${victim.index} after ${killAfter} acknowledged publishes; ` +
          `${attempts} publishes this round; subscribers on ${subscribers.map((s) => `${s.name}→node ${s.node.index}`).join(', ')}`,
      )
      await start(victim)
    }

    // Everything acknowledged must arrive; give the streams a bounded time.
    const deadline = Date.now() + DELIVERY_DEADLINE_MS
    while (
      Date.now() < deadline &&
      subscribers.some((s) => [...acked].some((id) => !s.deliveries.has(id)))
    ) {
      await sleep(100)
    }
    for (const s of subscribers) await s.handle!.close()

    expect(Object.fromEntries(counts.other), 'statuses other than 202').toEqual({})
    for (const s of subscribers) {
      const missing = [...acked].filter((id) => !s.deliveries.has(id))
      const duplicated = [...s.deliveries.values()].filter((n) => n > 1).length
      const unacknowledged = [...s.deliveries.keys()].filter((id) => !acked.has(id)).length
      console.log(
        `${s.name}: acknowledged ${acked.size}, delivered ${s.deliveries.size - unacknowledged} of them ` +
          `(+${unacknowledged} stored by a node killed before its 202), duplicated ${duplicated}, ` +
          `missing ${missing.length}, reconnects to another node ${s.reconnects}`,
      )
      expect(missing, `${s.name} missed acknowledged publishes`).toEqual([])
      expect(duplicated, `${s.name} got a message twice`).toBe(0)
    }
    expect(subscribers.every((s) => s.reconnects >= 1)).toBe(true)
    console.log(
      `publishes: ${counts.attempts} attempted, ${counts.acked} acknowledged (202), ${counts.failed} cut by a kill`,
    )
  })
})
