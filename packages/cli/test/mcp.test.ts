/**
 * `agentmsg mcp` as an MCP client runs it: the built bin spawned by the MCP SDK's own
 * `StdioClientTransport`, driven with its `Client`, on an agent directory made by `agentmsg
 * init`, listening on a real relay (`serveRelay`, a development certificate). Bob, a node agent
 * in this process, answers on the same relay.
 */
import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import {
  createAddressPolicy,
  createNodeAgent,
  type NodeAgent,
  type ReceivedMessage,
} from '@agentmsg/client/node'
import { createDevCertificate } from '@agentmsg/dev-tls'
import { memoryRelayStore, type RelayServer, serveRelay } from '@agentmsg/relay'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLI, CLI_ARGS, cliBuilt, eventually, oneErrorLine, run } from './cli-helpers.js'

let dir: string
let caFile: string
let relay: RelayServer
let bob: NodeAgent
const toBob: ReceivedMessage[] = []

/** `agentmsg init` a directory remembering the relay; its agent id. */
async function init(name: string): Promise<string> {
  const r = await run(['init', '--dir', path.join(dir, name), '--relay', relay.url])
  expect(r.code, r.stderr).toBe(0)
  return JSON.parse(r.stdout).agent_id
}

interface Server {
  client: Client
  stderr: () => string
  /** A tool's answer: its JSON, or (`isError`) its text. */
  call: (name: string, args?: Record<string, unknown>) => Promise<any>
  /** A failing tool call's text. */
  fails: (name: string, args?: Record<string, unknown>) => Promise<string>
  read: (uri: string) => Promise<any>
  /** Close the client: the server ends, having released the directory, stdout MCP only. */
  close: () => Promise<void>
}

/** `agentmsg mcp --dir <name> …` started by an MCP client. */
async function mcp(name: string, flags: string[] = []): Promise<Server> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...CLI_ARGS, 'mcp', '--dir', path.join(dir, name), '--ca', caFile, ...flags],
    env: process.env as Record<string, string>,
    stderr: 'pipe',
  })
  let err = ''
  transport.stderr?.on('data', (d) => (err += d))
  const client = new Client({ name: 'mcp-test', version: '1.0.0' })
  // A line on stdout that is not MCP would be reported here.
  const errors: unknown[] = []
  client.onerror = (error) => void errors.push(error)
  await client.connect(transport)
  const result = async (name: string, args: Record<string, unknown>) => {
    const r = (await client.callTool({ name, arguments: args })) as {
      isError?: boolean
      content: Array<{ type: string; text: string }>
    }
    return { isError: r.isError === true, text: r.content[0]!.text }
  }
  return {
    client,
    stderr: () => err,
    call: async (name, args = {}) => {
      const r = await result(name, args)
      expect(r.isError, r.text).toBe(false)
      return JSON.parse(r.text)
    },
    fails: async (name, args = {}) => {
      const r = await result(name, args)
      expect(r.isError, r.text).toBe(true)
      return r.text
    },
    read: async (uri) => {
      const r = await client.readResource({ uri })
      return JSON.parse((r.contents[0] as { text: string }).text)
    },
    close: async () => {
      await client.close()
      expect(errors).toEqual([])
      // The store's lock goes only when it closes (a killed server leaves it behind).
      expect(existsSync(path.join(dir, name, 'lock'))).toBe(false)
    },
  }
}

/** What `receive` hands over, read to the end from the start. */
async function receiveAll(s: Server): Promise<Array<Record<string, any>>> {
  const all: Array<Record<string, any>> = []
  let after: string | undefined
  for (;;) {
    const r = await s.call('receive', after === undefined ? {} : { after })
    all.push(...r.messages)
    if (!r.more) return all
    after = r.next
  }
}

/** Resolves once `receive` hands over messages with every text of `texts`. */
async function received(s: Server, texts: string[]): Promise<Array<Record<string, any>>> {
  for (;;) {
    const all = await receiveAll(s)
    if (texts.every((t) => all.some((m) => m.text === t))) return all
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

beforeAll(async () => {
  if (!cliBuilt()) throw new Error(`${CLI} is missing: run "npm run build" first (npm test does)`)
  dir = await mkdtemp(path.join(tmpdir(), 'agentmsg-mcp-'))
  const tls = await createDevCertificate()
  caFile = path.join(dir, 'ca.pem')
  await writeFile(caFile, tls.ca)
  relay = await serveRelay({
    port: 0,
    dataDir: path.join(dir, 'relay'),
    tls: { cert: tls.cert, key: tls.key },
    store: memoryRelayStore(),
    onError: () => {},
  })
  const loopback = createAddressPolicy({ allow: ['127.0.0.1'] })
  bob = await createNodeAgent({ relays: [relay.url], ca: tls.ca, addressPolicy: loopback })
  bob.on('message', (m) => void toBob.push(m))
}, 60_000)

afterAll(async () => {
  await bob?.close()
  await relay?.close()
  if (dir) await rm(dir, { recursive: true, force: true })
})

describe('agentmsg mcp', () => {
  it('has --help with an example, and agentmsg --help lists it', async () => {
    const help = await run(['mcp', '--help'])
    expect(help).toMatchObject({ code: 0, stderr: '' })
    expect(help.stdout).toMatch(/^usage: agentmsg mcp --dir D /)
    expect(help.stdout).toMatch(/\nexample[^\n]*:\n {2}agentmsg mcp --dir /)
    expect((await run(['--help'])).stdout).toMatch(/^ {2}mcp {7}serve the agent to an MCP client/m)
  })

  it('sends, receives verified replies, and hands over only what was not acked after a restart', {
    timeout: 90_000,
  }, async () => {
    const aliceId = await init('alice')
    const first = await mcp('alice', ['--allow-private', '127.0.0.1'])
    const tools = (await first.client.listTools()).tools.map((t) => t.name).sort()
    expect(tools).toEqual(['ack', 'contacts', 'identity', 'receive', 'send'])
    const me = await first.call('identity')
    expect(me).toMatchObject({ agent_id: aliceId, kind: 'did:key', relays: [relay.url] })
    expect(first.stderr()).toContain(`${aliceId} serving MCP on stdio`)

    // Bob pinned: his replies come from a known contact.
    const publicKey = Buffer.from(bob.identity.publicKey).toString('base64url')
    const pinned = await first.call('contacts', {
      action: 'pin',
      agent: bob.id,
      public_key: publicKey,
    })
    expect(pinned).toMatchObject({ agent: bob.id, knownContact: true })
    const list = await first.call('contacts', { action: 'list' })
    expect(list.contacts.map((c: { agent: string }) => c.agent)).toContain(bob.id)

    const sent = await first.call('send', { to: bob.id, text: 'hello bob', relays: [relay.url] })
    expect(sent).toMatchObject({ status: 'accepted', route: 'relay', sealed: true })
    const hello = await eventually(() =>
      toBob.find((m) => m.message.message_id === sent.message_id),
    )
    expect(hello).toMatchObject({ from: aliceId, text: 'hello bob', sealed: true })
    // Bob answers twice through the relays alice named in her message.
    await bob.reply(hello, 'reply one')
    await bob.reply(hello, 'reply two')

    const held = await received(first, ['reply one', 'reply two'])
    const one = held.find((m) => m.text === 'reply one')!
    const two = held.find((m) => m.text === 'reply two')!
    expect(one).toMatchObject({
      from: bob.id,
      conversation_id: sent.conversation_id,
      level: 3,
      known_contact: true,
      sealed: true,
      transport: 'relay',
      data: [],
    })
    // The cursor goes on from where a receive stopped.
    const after = await first.call('receive', { after: one.cursor })
    expect(after.messages.map((m: { text: string }) => m.text)).not.toContain('reply one')
    expect(await first.call('ack', { message_ids: [one.message_id] })).toEqual({ removed: 1 })
    expect(await first.call('ack', { message_ids: [one.message_id] })).toEqual({ removed: 0 })

    const { conversations } = await first.read('agentmsg://conversations')
    expect(conversations).toEqual([
      {
        conversation_id: sent.conversation_id,
        held: 1,
        from: [bob.id],
        uri: `agentmsg://conversations/${sent.conversation_id}`,
      },
    ])
    const resources = (await first.client.listResources()).resources.map((r) => r.uri)
    expect(resources).toContain(`agentmsg://conversations/${sent.conversation_id}`)
    const thread = await first.read(`agentmsg://conversations/${sent.conversation_id}`)
    expect(thread.messages.map((m: { text: string }) => m.text)).toEqual(['reply two'])

    // Closing the client ends the server, which releases the directory.
    await first.close()

    const second = await mcp('alice', ['--allow-private', '127.0.0.1'])
    const again = await receiveAll(second)
    expect(again.map((m) => m.message_id)).toEqual([two.message_id])
    expect(again[0]).toMatchObject({ text: 'reply two', known_contact: true, sealed: true })
    await second.close()
  })

  it('refuses a second server on the same directory', { timeout: 60_000 }, async () => {
    await init('carol')
    const s = await mcp('carol', ['--allow-private', '127.0.0.1'])
    const r = await run(['mcp', '--dir', path.join(dir, 'carol'), '--ca', caFile])
    expect(r.code).toBe(1)
    expect(oneErrorLine(r, 'in_use')).toMatch(/in use by process \d+/)
    // The first one still serves.
    expect((await s.call('identity')).relays).toEqual([relay.url])
    await s.close()
  })

  it('refuses bad tool input with a clear error', { timeout: 60_000 }, async () => {
    await init('dave')
    const s = await mcp('dave', ['--allow-private', '127.0.0.1'])
    expect(await s.fails('send', { to: bob.id })).toBe(
      'invalid_input: send takes exactly one of text or data',
    )
    expect(await s.fails('send', { to: bob.id, text: 'a', data: { a: 1 } })).toMatch(
      /^invalid_input: /,
    )
    // What the tools' schemas refuse reads the same way.
    expect(await s.fails('send', { to: bob.id, text: 'x', relays: ['http://127.0.0.1'] })).toBe(
      'invalid_input: Invalid arguments for tool send: a relay URL is https://host[:port][/path] at relays[0]',
    )
    expect(await s.fails('receive', { limit: 100_000 })).toMatch(/^invalid_input: .* at limit$/)
    expect(await s.fails('ack', { message_ids: [] })).toMatch(/^invalid_input: .* at message_ids$/)
    expect(await s.fails('ack', { message_ids: ['../etc'] })).toMatch(/at message_ids\[0\]$/)
    const secret = 'not a token but a secret!'
    const refused = await s.fails('contacts', { action: 'introduce', token: secret })
    expect(refused).toMatch(/token is 43 base64url characters/)
    expect(refused).not.toContain(secret)
    expect(await s.fails('contacts', { action: 'pin', agent: bob.id })).toBe(
      'invalid_input: pin needs agent and public_key',
    )
    // A did:key with no relay known: the client's error, with its code.
    const other = 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK'
    expect(await s.fails('send', { to: other, text: 'hi' })).toMatch(/^[a-z_]+: .*pass relays/)
    await s.close()
  })

  it('holds at most --max-held messages: the rest wait until an ack makes room', {
    timeout: 60_000,
  }, async () => {
    const eveId = await init('eve')
    const flags = ['--allow-private', '127.0.0.1', '--max-held', '1']
    const s = await mcp('eve', flags)
    for (const text of ['first', 'second']) await bob.send(eveId, text, { relays: [relay.url] })
    await received(s, ['first'])
    await eventually(() => (s.stderr().includes('the mailbox is full') ? true : undefined))
    expect((await receiveAll(s)).map((m) => m.text)).toEqual(['first'])
    // Stopped while "second" waits for room: it is kept in the directory, not lost.
    await s.close()

    const again = await mcp('eve', flags)
    const [first] = await received(again, ['first'])
    await eventually(() => (again.stderr().includes('the mailbox is full') ? true : undefined))
    expect(await again.call('ack', { message_ids: [first!.message_id] })).toEqual({ removed: 1 })
    expect((await received(again, ['second'])).map((m) => m.text)).toEqual(['second'])
    await again.close()
  })
})
