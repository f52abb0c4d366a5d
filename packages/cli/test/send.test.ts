import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import {
  createAddressPolicy,
  createNodeAgent,
  type NodeAgentOptions,
  type ReceivedMessage,
} from '@agentmsg/client/node'
import { loadDevCertificate } from '@agentmsg/dev-tls'
import { fsStorage } from '@agentmsg/storage-fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  CLI,
  cliBuilt,
  filesContaining,
  freePort,
  type InboxProcess,
  type RelayProcess,
  run,
  startInbox,
  startRelay,
} from './cli-helpers.js'

// `agentmsg send` as users run it: the built bin in child processes, a relay process on SQLite,
// bob's `agentmsg inbox` process, and relay-listening agents on their own agent directories.
let dir: string
let relay: RelayProcess
let alice: string
let carolId: string
let frankId: string
let carol: Listener
let frank: Listener
const LOOPBACK = ['--allow-private', '127.0.0.1']

async function init(name: string, url?: string): Promise<string> {
  const r = await run(['init', '--dir', path.join(dir, name), ...(url ? ['--url', url] : [])])
  expect(r.code, r.stderr).toBe(0)
  return JSON.parse(r.stdout).agent_id
}

/** `agentmsg send` from alice's directory. */
const send = (args: string[], from = alice) => run(['send', '--dir', from, ...args])

/** A failed run printed exactly one line, `agentmsg: <code>: …`, on stderr and nothing else. */
function expectOneErrorLine(r: { stdout: string; stderr: string }, code: string): string {
  expect(r.stdout).toBe('')
  const lines = r.stderr.split('\n')
  expect(lines, r.stderr).toHaveLength(2) // the line and the empty rest after its LF
  expect(lines[1]).toBe('')
  expect(lines[0]).toMatch(new RegExp(`^agentmsg: ${code}: \\S`))
  return lines[0]!
}

/** Resolves once `found` returns something (no deadline of its own: the test timeout is it). */
async function eventually<T>(found: () => T | undefined): Promise<T> {
  for (;;) {
    const value = found()
    if (value !== undefined) return value
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** An agent on its directory's store, listening on the relay (it holds the key to open bodies). */
interface Listener {
  received: ReceivedMessage[]
  got: (messageId: string) => Promise<ReceivedMessage>
  close: () => Promise<void>
}

async function listen(
  name: string,
  options: { ca: string[]; inbox?: NodeAgentOptions['inbox'] },
): Promise<Listener> {
  const storage = await fsStorage({ dir: path.join(dir, name) })
  const received: ReceivedMessage[] = []
  const agent = await createNodeAgent({
    storage,
    relays: [relay.url],
    ca: options.ca,
    addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
    ...(options.inbox ? { inbox: options.inbox } : {}),
  })
  agent.on('message', (m) => void received.push(m))
  return {
    received,
    got: (id) => eventually(() => received.find((m) => m.message.message_id === id)),
    close: () => agent.close().then(() => storage.close?.()),
  }
}

beforeAll(async () => {
  if (!cliBuilt()) throw new Error(`${CLI} is missing: run "npm run build" first (npm test does)`)
  dir = await mkdtemp(path.join(tmpdir(), 'agentmsg-send-'))
  alice = path.join(dir, 'alice')
  await init('alice')
  carolId = await init('carol')
  // Frank, a URL agent, serves his identity document with a certificate of another development
  // CA (another machine directory's): the relay trusts it (it fetches the document when frank
  // opens his mailbox), alice, trusting this machine's development CA, does not.
  const frankPort = await freePort()
  frankId = await init('frank', `https://127.0.0.1:${frankPort}`)
  const frankTls = await loadDevCertificate(path.join(dir, 'frank', 'dev-tls'), {
    home: path.join(dir, 'frank-machine'),
  })
  relay = await startRelay(path.join(dir, 'relay'), LOOPBACK, {
    NODE_EXTRA_CA_CERTS: frankTls.caFile,
  })
  const relayCa = await readFile(relay.certFile, 'utf8')
  carol = await listen('carol', { ca: [relayCa] })
  frank = await listen('frank', {
    ca: [relayCa, frankTls.ca],
    inbox: { port: frankPort, tls: frankTls },
  })
}, 60_000)

afterAll(async () => {
  await carol?.close()
  await frank?.close()
  if (relay) expect(await relay.stop()).toBe(0)
  if (dir) await rm(dir, { recursive: true, force: true })
})

describe('agentmsg send through a relay', () => {
  const viaRelay = () => [
    '--to',
    carolId,
    '--relay',
    relay.url,
    '--ca',
    relay.certFile,
    ...LOOPBACK,
  ]

  it('seals by default: prints "sealed", the relay stores no plaintext, carol opens it', async () => {
    const r = await send([...viaRelay(), '--text', 'sealed through the relay'])
    expect(r.code, r.stderr).toBe(0)
    expect(r.stderr).toBe('')
    const line = r.stdout.trimEnd()
    expect(line).not.toContain('\n')
    const match = new RegExp(
      `^accepted (\\S+) via relay ${relay.url.replace(/[.]/g, '\\.')}, sealed, conversation \\S+$`,
    ).exec(line)
    expect(match, line).not.toBeNull()
    const got = await carol.got(match![1]!)
    expect(got).toMatchObject({ sealed: true, text: 'sealed through the relay', level: 3 })
    // The relay's SQLite files (database and WAL) never held the body in plaintext.
    expect(await filesContaining(relay.dataDir, 'sealed through the relay')).toEqual([])
  })

  it('--format json: one object; --conversation continues the conversation', async () => {
    const r = await send([
      ...viaRelay(),
      '--text',
      'as json',
      '--conversation',
      'conv-cli-1',
      '--format',
      'json',
    ])
    expect(r.code, r.stderr).toBe(0)
    const out = JSON.parse(r.stdout)
    expect(out).toEqual({
      status: 'accepted',
      message_id: expect.any(String),
      conversation_id: 'conv-cli-1',
      route: 'relay',
      relay_url: relay.url,
      transport: 'relay',
      sealed: true,
    })
    const got = await carol.got(out.message_id)
    expect(got).toMatchObject({ sealed: true, text: 'as json', conversationId: 'conv-cli-1' })
  })

  it('a recipient whose key is unknown: refused unless --plaintext, which sends unsealed', async () => {
    // Alice cannot fetch frank's identity document (she does not trust his certificate), so
    // she has no key to seal for.
    const args = ['--to', frankId, '--route', 'relay', '--relay', relay.url, '--ca', relay.certFile]
    const refused = await send([...args, ...LOOPBACK, '--text', 'no key'])
    expect(refused.code).toBe(1)
    const line = expectOneErrorLine(refused, 'not_found')
    expect(line).toMatch(/cannot seal for .*pass --plaintext/)

    const plain = await send([...args, ...LOOPBACK, '--text', 'no key', '--plaintext'])
    expect(plain.code, plain.stderr).toBe(0)
    const match = /^accepted (\S+) via relay \S+, not sealed, conversation \S+\n$/.exec(
      plain.stdout,
    )
    expect(match, plain.stdout).not.toBeNull()
    expect(await frank.got(match![1]!)).toMatchObject({ sealed: false, text: 'no key' })
    expect(frank.received).toHaveLength(1) // the refused send never left alice
  })
})

describe('agentmsg send direct to an inbox', () => {
  let bob: InboxProcess | undefined
  let bobId: string
  const direct = () => ['--to', bobId, '--route', 'direct', '--ca', bob!.certFile, ...LOOPBACK]
  afterAll(() => bob?.child.kill('SIGKILL'))

  /** Bob's printed line for message `id` (it may be out before the send's process ends). */
  async function bobPrints(id: string): Promise<Record<string, any>> {
    const line = await eventually(() =>
      bob!
        .stdout()
        .split('\n')
        .find((l) => l.includes(id)),
    )
    return JSON.parse(line)
  }

  it('is not sealed by default; --seal seals it; bob prints the sealed flag', async () => {
    const port = await freePort()
    bobId = await init('bob', `https://127.0.0.1:${port}`)
    bob = await startInbox(path.join(dir, 'bob'), port)

    const plain = await send([...direct(), '--text', 'direct and plain'])
    expect(plain.code, plain.stderr).toBe(0)
    const plainId = /^accepted (\S+) direct, not sealed, conversation \S+\n$/.exec(plain.stdout)
    expect(plainId, plain.stdout).not.toBeNull()
    const plainLine = await bobPrints(plainId![1]!)
    expect(plainLine).toMatchObject({ sealed: false, level: 3 })
    expect(plainLine.message.body.parts).toEqual([{ type: 'text', text: 'direct and plain' }])

    const sealed = await send([...direct(), '--text', 'direct and sealed', '--seal'])
    expect(sealed.code, sealed.stderr).toBe(0)
    const sealedId = /^accepted (\S+) direct, sealed, conversation \S+\n$/.exec(sealed.stdout)
    expect(sealedId, sealed.stdout).not.toBeNull()
    const sealedLine = await bobPrints(sealedId![1]!)
    expect(sealedLine).toMatchObject({ sealed: true, level: 3 })
    // Bob's inbox opened it: the printed message carries the opened body.
    expect(sealedLine.message.body.parts).toEqual([{ type: 'text', text: 'direct and sealed' }])
  })

  it('--json FILE: the JSON value goes as one data part, application/json', async () => {
    const file = path.join(dir, 'body.json')
    const value = { order: 42, items: ['tea', 'cake'], rush: false }
    await writeFile(file, JSON.stringify(value))
    const r = await send([...direct(), '--json', file, '--format', 'json'])
    expect(r.code, r.stderr).toBe(0)
    const out = JSON.parse(r.stdout)
    expect(out).toMatchObject({ status: 'accepted', route: 'direct', sealed: false })
    expect(out).not.toHaveProperty('relay_url')
    const line = await bobPrints(out.message_id)
    expect(line.message.content_type).toBe('application/json')
    expect(line.message.body.parts).toEqual([{ type: 'data', data: value }])
  })

  it('an inbox that does not answer: "pending", kept in the outbox, exit 0', async () => {
    const port = await freePort()
    const sender = path.join(dir, 'dave')
    await init('dave')
    const down = await init('erin', `https://127.0.0.1:${port}`)
    const r = await send(
      ['--to', down, '--route', 'direct', ...LOOPBACK, '--text', 'later'],
      sender,
    )
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toMatch(
      /^pending \S+ direct, not sealed, conversation \S+: the inbox did not answer; kept in .*'s outbox and retried/,
    )
    // The delivery is in dave's store, for the next run to retry.
    expect((await filesContaining(sender, '"later"')).length).toBeGreaterThan(0)
  })
})

describe('agentmsg send errors: one line, a documented exit code', () => {
  it('usage errors exit 2', async () => {
    const text = ['--text', 'x']
    const unknown = await send(['--to', carolId, ...text, '--bogus'])
    expect(unknown.code).toBe(2)
    expect(expectOneErrorLine(unknown, 'usage')).toContain('--bogus')
    const noTo = await send(text)
    expect(noTo.code).toBe(2)
    expect(expectOneErrorLine(noTo, 'usage')).toContain('--to')
    const both = await send(['--to', carolId, ...text, '--seal', '--plaintext'])
    expect(both.code).toBe(2)
    expect(expectOneErrorLine(both, 'usage')).toMatch(/--seal and --plaintext/)
    const noBody = await send(['--to', carolId])
    expect(noBody.code).toBe(2)
    expectOneErrorLine(noBody, 'usage')
    const route = await send(['--to', carolId, ...text, '--route', 'carrier-pigeon'])
    expect(route.code).toBe(2)
    expectOneErrorLine(route, 'usage')
  })

  it('a --json file that cannot be read, is not JSON or is over 1 MiB exits 2', async () => {
    const missing = await send(['--to', carolId, '--json', path.join(dir, 'missing.json')])
    expect(missing.code).toBe(2)
    expect(expectOneErrorLine(missing, 'invalid_input')).toContain('missing.json')
    const broken = path.join(dir, 'broken.json')
    await writeFile(broken, '{"a":\n  [1, 2,\n')
    const notJson = await send(['--to', carolId, '--json', broken])
    expect(notJson.code).toBe(2)
    expect(expectOneErrorLine(notJson, 'invalid_input')).toMatch(/not JSON/)
    const huge = path.join(dir, 'huge.json')
    await writeFile(huge, JSON.stringify('x'.repeat(1_048_576)))
    const tooBig = await send(['--to', carolId, '--json', huge])
    expect(tooBig.code).toBe(2)
    expect(expectOneErrorLine(tooBig, 'invalid_input')).toMatch(/larger than 1048576 bytes/)
  })

  it('an unreachable relay: "pending", kept in the outbox; a directory without identity exits 1', async () => {
    const closed = `https://127.0.0.1:${await freePort()}`
    const r = await send(['--to', carolId, '--relay', closed, ...LOOPBACK, '--text', 'lost'])
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toMatch(
      /^pending \S+ via relays, sealed, conversation \S+: https:\S+: nothing answered \(ECONNREFUSED\) — is the relay running\? check with `agentmsg doctor https:\S+`; kept in .*'s outbox/,
    )
    const nobody = await send(['--to', carolId, '--text', 'x'], path.join(dir, 'nobody'))
    expect(nobody.code).toBe(1)
    expectOneErrorLine(nobody, 'no_identity')
  })
})
