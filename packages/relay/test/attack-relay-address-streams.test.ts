/**
 * An outside probe's attack on the relay's memory, against a real relay process on loopback
 * (the built `agentmsg relay`, on SQLite, or PostgreSQL in the project `relay-on-postgres`):
 * one client address subscribes 300 throwaway did:keys to a topic, publishes 3 × 1 MiB to it,
 * then opens 1,000 unread streams for them (at most 4 per agent). It took a relay from 573 to
 * 3,129 MiB over SSE, and from 85 to 925 MiB with 600 WebSockets. PROFILE §9 "Streams per
 * client address, and their memory": at most 64 streams per address (beyond → 429, a WebSocket
 * 1013), each holding at most 1 MiB + 64 KiB unsent, so the relay's RSS stays bounded.
 *
 * The probe paced itself under the per-address request rate (one stream every 105 ms); the
 * relay here runs with `--rate-limit unlimited` so the test need not wait as long: what is
 * tested is what the streams hold, not the rate.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { type FixtureAgent, fixtureAgent } from '@agentmsg/conformance'
import { PROFILE } from '@agentmsg/core'
import { afterEach, describe, expect, it } from 'vitest'
import { clockedMessage, testClock } from './attack-relay-helpers.js'
import { relayClient } from './helpers.js'
import { dropPostgresSchema, freshPostgresSchema, POSTGRES_TEST_URL } from './postgres-helpers.js'
import { freePort, requireBuiltCli, startRelayProcess } from './relay-process.js'
import { inBatches, type StreamOutcome, sseFrom, wsFrom } from './stream-clients.js'

const MiB = 1024 * 1024
const TOPIC = 'probe/streams'
const AGENTS = 300
const STREAMS = 1000
/** What the relay may grow by while the attack runs: 64 streams of ~1 MiB, TLS, the rest. */
const MAX_GROWTH_MIB = 300

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn()
})

/** The relay process's resident set, MiB (Linux). */
async function rssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024
}

/** A relay process on this project's store, 300 topic subscribers, 3 MiB published to them. */
async function attackedRelay() {
  requireBuiltCli()
  const dataDir = await mkdtemp(path.join(tmpdir(), 'agentmsg-streams-'))
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }))
  const flags = ['--rate-limit', 'unlimited']
  if (process.env.AGENTMSG_RELAY_TEST_STORE === 'postgres') {
    const schema = freshPostgresSchema()
    flags.push('--store', POSTGRES_TEST_URL!, '--store-schema', schema)
    cleanups.push(() => dropPostgresSchema(POSTGRES_TEST_URL!, schema))
  }
  const port = await freePort()
  const relay = await startRelayProcess(dataDir, port, flags)
  cleanups.push(async () => {
    relay.child.kill('SIGKILL')
    await relay.exited
  })
  const base = `https://127.0.0.1:${port}`
  const ca = await readFile(relay.certFile, 'utf8')
  const client = relayClient(base, ca)
  const agents = await inBatches(AGENTS, 8, async () => {
    const agent = await fixtureAgent()
    await client.subscribe(agent, {}, [TOPIC])
    return agent
  })
  const clock = testClock()
  const alice = await fixtureAgent()
  for (let i = 0; i < 3; i++) {
    const res = await client.publish(
      await clockedMessage(alice, { topic: TOPIC }, clock, MiB - 8192),
    )
    expect(res.status).toBe(202)
  }
  return { pid: relay.child.pid!, base, ca, agents }
}

/** Open `STREAMS` unread streams with `open`, sampling the relay's RSS; the outcomes and peak. */
async function attack(
  pid: number,
  agents: FixtureAgent[],
  open: (agent: FixtureAgent) => Promise<StreamOutcome>,
): Promise<{ outcomes: StreamOutcome[]; before: number; peak: number }> {
  const before = await rssMiB(pid)
  let peak = before
  const sample = async () => void (peak = Math.max(peak, await rssMiB(pid)))
  const sampler = setInterval(() => void sample().catch(() => undefined), 200)
  cleanups.push(() => clearInterval(sampler))
  // Agent i % 300: at most 4 streams per agent, within the per-agent cap.
  const outcomes = await inBatches(STREAMS, 10, (i) => open(agents[i % AGENTS]!))
  cleanups.push(() => {
    for (const o of outcomes) o.end()
  })
  // Let the open streams take what they may hold, then sample a few more times.
  for (let i = 0; i < 10; i++) {
    await new Promise((resolve) => setTimeout(resolve, 300))
    await sample()
  }
  clearInterval(sampler)
  return { outcomes, before, peak }
}

/** 64 open, the others refused with `status` and `rate_limited`. */
function expectCapped(outcomes: StreamOutcome[], status: number): void {
  const open = outcomes.filter((o) => o.status === 200)
  expect(open).toHaveLength(PROFILE.streamsPerAddress)
  const refused = outcomes.filter((o) => o.status !== 200)
  expect(refused.map((o) => o.status)).toEqual(refused.map(() => status))
  expect(refused.map((o) => o.code)).toEqual(refused.map(() => 'rate_limited'))
}

describe('attack: unread streams from one client address (relay process)', () => {
  it('1,000 unread SSE streams for 300 topic subscribers: 64 open, the rest 429, RSS bounded', async () => {
    const { pid, base, ca, agents } = await attackedRelay()
    const { outcomes, before, peak } = await attack(pid, agents, (a) => sseFrom(base, ca, a))
    console.log(`SSE: relay RSS ${before.toFixed(0)} → peak ${peak.toFixed(0)} MiB`)
    expectCapped(outcomes, 429)
    for (const o of outcomes.filter((o) => o.status === 429)) {
      expect(Number(o.retryAfter)).toBeGreaterThanOrEqual(1)
    }
    expect(peak - before).toBeLessThan(MAX_GROWTH_MIB)
  }, 240_000)

  it('1,000 unread WebSockets for 300 topic subscribers: 64 open, the rest closed 1013, RSS bounded', async () => {
    const { pid, base, ca, agents } = await attackedRelay()
    const { outcomes, before, peak } = await attack(pid, agents, (a) => wsFrom(base, ca, a))
    console.log(`WebSocket: relay RSS ${before.toFixed(0)} → peak ${peak.toFixed(0)} MiB`)
    expectCapped(outcomes, 1013)
    expect(peak - before).toBeLessThan(MAX_GROWTH_MIB)
  }, 240_000)
})
