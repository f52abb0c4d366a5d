/**
 * Issue 14: graceful stop. The relay runs as users run it (the built `agentmsg` bin in a child
 * process, SQLite in a temp data dir, `--dev-tls`, its limits from `--config`); publishers
 * drive it concurrently and it gets SIGTERM mid-load. It must exit 0 (within
 * `--shutdown-timeout`, past which it exits 1), tell its open streams to reconnect (SSE `retry:`,
 * WebSocket close 1012), and after a restart on the same data dir every publish that got a 202
 * must be in the mailbox, once.
 *
 * A second case stops the relay while a publish cannot finish (its sender's host never answers):
 * the relay gives up at its bound with exit 1 and a line saying so.
 */
import type { ChildProcess } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { Agent, request as httpsRequest } from 'node:https'
import { type AddressInfo, createServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { ed25519Signer, generateKeyPair, type Message } from '@agentmsg/core'
import { signWsAuth } from '@agentmsg/core/receive'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WebSocket } from 'ws'
import { relayClient, until } from './helpers.js'
import { freePort, type RelayProcess, requireBuiltCli, startRelayProcess } from './relay-process.js'

const CONCURRENCY = 16
/** SIGTERM once this many publishes got a 202. */
const SIGTERM_AFTER = 150
/** Publish attempts per worker at most. */
const MAX_ATTEMPTS = 200

interface RelayChild {
  child: ChildProcess
  url: string
  ca: string
  exited: RelayProcess['exited']
  stderr: () => string
}

/** Start `agentmsg relay` (relay-process.ts); resolves once it logged that it listens. */
async function startRelay(dataDir: string, port: number, flags: string[]): Promise<RelayChild> {
  const r = await startRelayProcess(dataDir, port, flags)
  const ca = await readFile(r.certFile, 'utf8')
  return {
    child: r.child,
    url: `https://127.0.0.1:${port}`,
    ca,
    exited: r.exited,
    stderr: r.output,
  }
}

/** POST a publish over `agent`: its status, or the connection error's code. */
function publish(agent: Agent, url: string, body: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = httpsRequest(`${url}/relay/publish`, {
      method: 'POST',
      agent,
      timeout: 15_000,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    })
    req.on('response', (res) => {
      res.resume()
      resolve(res.statusCode ?? 0)
    })
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })))
    req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message))
    req.end(body)
  })
}

const running: RelayChild[] = []
let dir: string
beforeAll(async () => {
  requireBuiltCli()
  dir = await mkdtemp(path.join(tmpdir(), 'agentmsg-sigterm-'))
})
afterAll(async () => {
  for (const r of running)
    if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL')
  await Promise.all(running.map((r) => r.exited))
  await rm(dir, { recursive: true, force: true })
})

describe('SIGTERM', () => {
  it('drains under publish load: exit 0, streams told to reconnect, every 202 kept', {
    timeout: 90_000,
  }, async () => {
    const dataDir = path.join(dir, 'load')
    const config = path.join(dir, 'load.json')
    // A load from one address and a few senders: the file lifts the limits (issue 12).
    await writeFile(
      config,
      JSON.stringify({
        limits: {
          perAddress: { rate: 'unlimited', burst: 100_000 },
          perSender: { rate: 'unlimited', burst: 100_000 },
        },
      }),
    )
    const port = await freePort()
    const flags = ['--config', config, '--shutdown-timeout', '10']
    const relay = await startRelay(dataDir, port, flags)
    running.push(relay)
    const client = relayClient(relay.url, relay.ca)
    const bob = await fixtureAgent()
    await client.subscribe(bob)
    const senders = await Promise.all(Array.from({ length: 4 }, () => fixtureAgent()))

    // Bob's streams, open across the stop.
    const sse = await client.request('GET', `/relay/stream?agent=${encodeURIComponent(bob.id)}`, {
      as: bob,
    })
    expect(sse.status).toBe(200)
    const sseText = (async () => {
      const reader = sse.body!.getReader()
      const decoder = new TextDecoder()
      let text = ''
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return text
        text += decoder.decode(value, { stream: true })
      }
    })()
    const ws = new WebSocket(`${relay.url.replace(/^https/, 'wss')}/relay/ws`, { ca: relay.ca })
    const wsClosed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)))
    await new Promise<void>((resolve, reject) => {
      ws.once('error', reject)
      ws.on('message', (data) => {
        const frame = JSON.parse(String(data)) as { type: string; nonce?: string }
        if (frame.type !== 'challenge') return
        signWsAuth({
          relayBaseUrl: relay.url,
          nonce: frame.nonce!,
          signer: bob.signer,
          agent: bob.id,
        }).then((auth) => {
          ws.send(JSON.stringify(auth))
          resolve()
        }, reject)
      })
    })

    const accepted = new Set<string>()
    const outcomes = new Map<number | string, number>()
    let exited = false
    void relay.exited.then(() => (exited = true))
    let signalled!: () => void
    const sigtermSent = new Promise<void>((resolve) => (signalled = resolve))
    const worker = async (w: number) => {
      const agent = new Agent({ ca: relay.ca, keepAlive: true, maxSockets: 1 })
      try {
        for (let i = 0; i < MAX_ATTEMPTS && !exited; i++) {
          const message = await signedMessage(senders[w % senders.length]!, bob.id, {
            text: `w${w} #${i}`,
          })
          const outcome = await publish(agent, relay.url, JSON.stringify(message))
          outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1)
          if (outcome === 202) {
            accepted.add(message.message_id)
            if (accepted.size === SIGTERM_AFTER) {
              relay.child.kill('SIGTERM')
              signalled()
            }
          } else if (typeof outcome === 'number' && outcome !== 503) {
            throw new Error(`publish answered ${outcome}\n${relay.stderr()}`)
          }
        }
      } finally {
        agent.destroy()
      }
    }
    await Promise.all([...Array.from({ length: CONCURRENCY }, (_, w) => worker(w)), sigtermSent])
    const { code, signal } = await relay.exited
    console.log(
      `SIGTERM after ${SIGTERM_AFTER} × 202: ${accepted.size} publishes got 202; outcomes ${JSON.stringify([...outcomes])}`,
    )
    expect({ code, signal }).toEqual({ code: 0, signal: null })
    expect(relay.stderr()).toContain('"msg":"SIGTERM: stopping"')
    expect(relay.stderr()).toContain('"msg":"stopped"')
    // Streams: the SSE one got the reconnect hint and ended; the WebSocket closed with 1012.
    expect(await sseText).toMatch(/: relay restarting\nretry: 1000\n\n$/)
    expect(await wsClosed).toBe(1012)

    // Restart on the same data dir: every 202 is there, once.
    const again = await startRelay(dataDir, port, flags)
    running.push(again)
    const reader = relayClient(again.url, again.ca)
    const ids: string[] = []
    let after = ''
    for (let page = 0; page < 50; page++) {
      const { messages, cursor } = await reader.retrieve(bob, `&limit=500${after}`)
      if (messages.length === 0) break
      ids.push(...messages.map((m: Message) => m.message_id))
      after = `&after=${encodeURIComponent(cursor!)}`
    }
    expect(new Set(ids).size).toBe(ids.length)
    const held = new Set(ids)
    expect([...accepted].filter((id) => !held.has(id))).toEqual([])
    again.child.kill('SIGTERM')
    expect((await again.exited).code).toBe(0)
  })

  it('gives up at --shutdown-timeout with exit 1 while a publish cannot finish', {
    timeout: 60_000,
  }, async () => {
    // The sender is a URL agent whose host takes the connection and never answers: the publish
    // stays in flight, resolving the sender's key, and the drain waits for it.
    const sockets: Socket[] = []
    const hanging = createServer((socket) => void sockets.push(socket))
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve))
    try {
      const origin = `https://127.0.0.1:${(hanging.address() as AddressInfo).port}`
      const dataDir = path.join(dir, 'stuck')
      const flags = ['--allow-private', '127.0.0.1', '--shutdown-timeout', '1']
      const relay = await startRelay(dataDir, await freePort(), flags)
      running.push(relay)
      const client = relayClient(relay.url, relay.ca)
      const bob = await fixtureAgent()
      await client.subscribe(bob)
      const keys = await generateKeyPair()
      const sender = { id: origin, signer: ed25519Signer(keys, `${origin}#k1`) }
      const pending = client.publish(await signedMessage(sender, bob.id)).catch(() => 'cut')
      await until(() => sockets.length > 0)
      relay.child.kill('SIGTERM')
      const { code, signal } = await relay.exited
      expect({ code, signal }, relay.stderr()).toEqual({ code: 1, signal: null })
      expect(relay.stderr()).toMatch(
        /"msg":"did not stop within 1 s \(--shutdown-timeout\): exiting 1"/,
      )
      expect(await pending).toBe('cut')
    } finally {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => hanging.close(resolve))
    }
  })
})
