/**
 * The CLI end to end, in real processes: `agentmsg init` makes bob (a URL agent serving his
 * inbox with `agentmsg inbox --dev-tls`) and alice (a did:key listening on a relay with
 * `agentmsg listen`); `agentmsg relay` runs on SQLite. Every server's certificate comes from
 * the one development CA in $AGENTMSG_HOME, so one `--ca` trusts them all. Bob's commands run
 * while his inbox holds his directory: the inbox takes them over its control socket and keeps
 * serving his identity document, which alice and the relay verify his messages with. Last,
 * `agentmsg doctor` checks bob and the relay, then names the fault once bob's inbox is down.
 */
import { existsSync } from 'node:fs'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fingerprint } from '@agentmsg/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  cliBuilt,
  eventually,
  freePort,
  type InboxProcess,
  type ListenProcess,
  type RelayProcess,
  run,
  startInbox,
  startListen,
  startRelay,
} from './cli-helpers.js'

let dir: string
let caFile: string
let alice: string
let bob: string
let aliceId: string
let bobId: string
let relay: RelayProcess
let relayPort: number
let inbox: InboxProcess
const running = new Set<{ stop: () => Promise<number | null> }>()
const LOOPBACK = ['--allow-private', '127.0.0.1']
const trust = () => ['--ca', caFile, ...LOOPBACK]

async function init(name: string, url?: string): Promise<string> {
  const r = await run(['init', '--dir', path.join(dir, name), ...(url ? ['--url', url] : [])])
  expect(r.code, r.stderr).toBe(0)
  return JSON.parse(r.stdout).agent_id
}

/** Run `agentmsg …`, expecting exit 0 and nothing on stderr; its stdout. */
async function ok(args: string[]): Promise<string> {
  const r = await run(args)
  expect(r.code, r.stderr).toBe(0)
  expect(r.stderr).toBe('')
  return r.stdout
}

async function listen(flags: string[] = []): Promise<ListenProcess> {
  const p = await startListen(alice, ['--json', ...trust(), ...flags])
  running.add(p)
  return p
}

async function stop(p: { stop: () => Promise<number | null> }): Promise<void> {
  running.delete(p)
  expect(await p.stop()).toBe(0)
}

/** Bob sends to alice through the relay (his running inbox sends it); the message id. */
async function bobSends(text: string): Promise<string> {
  const out = await ok([
    'send',
    '--dir',
    bob,
    '--to',
    aliceId,
    '--relay',
    relay.url,
    '--text',
    text,
  ])
  const match = /^accepted (\S+) via relay (\S+), sealed, conversation \S+\n$/.exec(out)
  expect(match, out).not.toBeNull()
  expect(match![2]).toBe(relay.url)
  return match![1]!
}

beforeAll(async () => {
  if (!cliBuilt())
    throw new Error('the CLI is not built: run "npm run build" first (npm test does)')
  dir = await mkdtemp(path.join(tmpdir(), 'agentmsg-e2e-'))
  caFile = path.join(process.env.AGENTMSG_HOME!, 'dev-ca', 'ca.pem')
  alice = path.join(dir, 'alice')
  bob = path.join(dir, 'bob')
  aliceId = await init('alice')
  const bobPort = await freePort()
  bobId = await init('bob', `https://127.0.0.1:${bobPort}`)
  // Bob's inbox trusts the dev CA for senders' documents; it makes the CA if none exists yet.
  inbox = await startInbox(bob, bobPort, trust())
  running.add(inbox)
  relayPort = await freePort()
  relay = await startRelay(path.join(dir, 'relay'), trust(), {}, relayPort)
  running.add(relay)
}, 60_000)

afterAll(async () => {
  for (const p of running) await p.stop()
  if (dir) await rm(dir, { recursive: true, force: true })
})

describe('agentmsg end to end', () => {
  it('every --dev-tls server names the one dev CA to trust', () => {
    expect(inbox.certFile).toBe(caFile)
    expect(relay.certFile).toBe(caFile)
  })

  it('identity --json: id, key, fingerprint, public key, document; also while the inbox runs', async () => {
    const a = JSON.parse(await ok(['identity', '--dir', alice, '--json']))
    expect(a).toMatchObject({ agent_id: aliceId, kind: 'did:key', relays: [], dir: alice })
    expect(a.key_id).toBe(`${aliceId}#${aliceId.slice('did:key:'.length)}`)
    expect(a.public_key).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(a.fingerprint).toBe(await fingerprint(a.public_key))
    expect(a.load).toBe(
      `createAgent({ storage: await fsStorage({ dir: ${JSON.stringify(alice)} }) })`,
    )
    expect(a).not.toHaveProperty('document')

    // Bob's directory is held by his inbox: the inbox answers over its control socket (only
    // its owner may connect), with the document it serves.
    expect((await stat(path.join(bob, 'control.sock'))).mode & 0o777).toBe(0o600)
    const b = JSON.parse(await ok(['identity', '--dir', bob, '--json']))
    expect(b).toMatchObject({
      agent_id: bobId,
      kind: 'url',
      document_url: `${bobId}/.well-known/agentmsg/identity`,
    })
    const served = await (await inbox.fetch(b.document_url)).json()
    expect(b.document).toEqual(served)
    const active = served.keys.find((k: { status: string }) => k.status === 'active')
    expect(`${bobId}#${active.key_id}`).toBe(b.key_id)
    expect(active.public_key).toBe(b.public_key)

    const human = await ok(['identity', '--dir', alice])
    expect(human).toContain(`fingerprint  ${a.fingerprint}`)
    expect(human).toContain(a.load)
  })

  it("send direct: alice to bob's inbox, printed there at level 3", async () => {
    const out = await ok([
      'send',
      '--dir',
      alice,
      '--to',
      bobId,
      '--route',
      'direct',
      '--text',
      'direct hello',
      ...trust(),
    ])
    const id = /^accepted (\S+) direct, not sealed, conversation \S+\n$/.exec(out)?.[1]
    expect(id, out).toBeDefined()
    const line = await eventually(() =>
      inbox
        .stdout()
        .split('\n')
        .find((l) => l.includes(id!)),
    )
    expect(JSON.parse(line)).toMatchObject({ from: aliceId, level: 3, sealed: false })
  })

  it('send via the relay: listen --json prints it, acknowledges it, and a second listen does not print it again', async () => {
    const first = await listen(['--relay', relay.url])
    const id = await bobSends('through the relay')
    const got = await eventually(() => first.messages().find((m) => m.message.message_id === id))
    // Bob's key from his identity document, fetched by alice over https with the dev CA.
    expect(got).toMatchObject({
      from: bobId,
      level: 2,
      source: 'identity-document',
      sealed: true,
      transport: 'relay',
      conversation: got.message.conversation_id,
    })
    expect(got.message.body.parts).toEqual([{ type: 'text', text: 'through the relay' }])
    await stop(first)

    // The relay is remembered: listen without --relay. A new message comes; the acknowledged
    // one, which would stream first if it were still in the mailbox, does not.
    const marker = await bobSends('after the first listen')
    const second = await listen()
    await eventually(() => second.messages().find((m) => m.message.message_id === marker))
    expect(second.messages().map((m) => m.message.message_id)).toEqual([marker])
    await stop(second)
    expect(JSON.parse(await ok(['identity', '--dir', alice, '--json'])).relays).toEqual([relay.url])
  })

  it('rotate (done by the running inbox), then a send verifies with the new key', async () => {
    const before = JSON.parse(await ok(['identity', '--dir', bob, '--json']))
    const rotated = JSON.parse(await ok(['rotate', '--dir', bob, '--json']))
    expect(rotated.key_id).not.toBe(before.key_id)
    expect(rotated.key_id.startsWith(`${bobId}#`)).toBe(true)
    expect(rotated.fingerprint).toBe(await fingerprint(rotated.public_key))
    // The inbox serves the new document at once: the new key active, the old one retired.
    const served = await (await inbox.fetch(`${bobId}/.well-known/agentmsg/identity`)).json()
    const status = Object.fromEntries(
      served.keys.map((k: { key_id: string; status: string }) => [
        `${bobId}#${k.key_id}`,
        k.status,
      ]),
    )
    expect(status).toMatchObject({ [rotated.key_id]: 'active', [before.key_id]: 'retired' })

    // The running relay fetched bob's document less than a minute ago, and may refetch it for an
    // unknown key only once a minute (PROFILE §4); a restarted relay (same data, same port)
    // fetches it afresh.
    await stop(relay)
    relay = await startRelay(path.join(dir, 'relay'), trust(), {}, relayPort)
    running.add(relay)

    const third = await listen(['--ws'])
    const id = await bobSends('signed with the new key')
    const got = await eventually(() => third.messages().find((m) => m.message.message_id === id))
    expect(got).toMatchObject({ from: bobId, level: 2, source: 'identity-document', sealed: true })
    expect(got.message.security.signatures[0].key_id).toBe(rotated.key_id)
    expect(got.message.body.parts).toEqual([{ type: 'text', text: 'signed with the new key' }])
    await stop(third)
  })

  it('listen without --json: one human line per message, peer text escaped', async () => {
    const p = await startListen(alice, trust())
    running.add(p)
    await bobSends('two\nlines \u001b[31mred')
    const line = await eventually(() =>
      p
        .stdout()
        .split('\n')
        .find((l) => l.includes('lines')),
    )
    const from = bobId.replace(/[.]/g, '\\.')
    expect(line).toMatch(
      new RegExp(
        `^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ  ${from}  level 2 (new|contact)  sealed  two\\\\nlines \\\\u001b\\[31mred$`,
      ),
    )
    // The control character never reaches the terminal.
    expect(p.stdout()).not.toContain('\u001b')
    await stop(p)
  })

  it('listen --json: controls JSON leaves raw (C1, bidirectional overrides) escaped, same value', async () => {
    const p = await listen()
    const text = 'c1 \u009b2J bidi \u202eevil'
    const id = await bobSends(text)
    const got = await eventually(() => p.messages().find((m) => m.message.message_id === id))
    expect(got.message.body.parts).toEqual([{ type: 'text', text }])
    expect(p.stdout()).toContain('c1 \\u009b2J bidi \\u202eevil')
    for (const raw of ['\u009b', '\u202e']) expect(p.stdout()).not.toContain(raw)
    await stop(p)
  })

  it('a listen whose stdout closes ends (exit 0); the message it could not print comes again', async () => {
    const p = await listen()
    const first = await bobSends('before the reader left')
    await eventually(() => p.messages().find((m) => m.message.message_id === first))
    // The reader goes away (`agentmsg listen | head -1`): the next write fails with EPIPE.
    p.child.stdout!.destroy()
    const second = await bobSends('after the reader left')
    running.delete(p)
    expect(await p.exited).toBe(0)
    const again = await listen()
    await eventually(() => again.messages().find((m) => m.message.message_id === second))
    expect(again.messages().map((m) => m.message.message_id)).toEqual([second])
    await stop(again)
  })

  it('doctor passes against bob and the relay, and names the fault once the inbox is stopped', async () => {
    const report = async (target: string) => {
      const r = await run(['doctor', target, '--json', ...trust()])
      return { code: r.code, ...JSON.parse(r.stdout) }
    }
    expect(await report(bobId)).toMatchObject({ code: 0, ok: true })
    expect(await report(relay.url)).toMatchObject({ code: 0, ok: true })

    const p = await listen()
    running.delete(p)
    expect(await p.stop('SIGINT')).toBe(0)
    expect(p.stderr()).toMatch(/SIGINT: stopping/)
    await stop(inbox)
    expect(existsSync(path.join(bob, 'control.sock'))).toBe(false)
    const down = await report(bobId)
    expect(down).toMatchObject({ code: 1, ok: false })
    expect(down.checks.find((c: { check: string }) => c.check === 'tls')).toMatchObject({
      status: 'failed',
    })
    await stop(relay)
  })
})
