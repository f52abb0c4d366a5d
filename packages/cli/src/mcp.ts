/**
 * `agentmsg mcp`: the directory's agent as an MCP server on stdio. It holds the directory as
 * `listen` does (its lock, its control socket), listens on its relays, keeps each verified
 * message in the mailbox (mcp-mailbox.ts) until the MCP client acks it, and serves the tools
 * and resources of mcp-tools.ts. stdout carries MCP only; diagnostics go to stderr.
 */
import { readFileSync } from 'node:fs'
import { createNodeAgent, type NodeAgent } from '@agentmsg/client/node'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { openAgentDir, rememberRelays, storedRelays } from './agent-dir.js'
import { type AgentRequest, perform } from './agent-ops.js'
import { command, info, networkFlags, relayFlags, untilSignal, usageError } from './command.js'
import { serveControl } from './control.js'
import { DEFAULT_MAX_HELD, Mailbox } from './mcp-mailbox.js'
import { createMcpServer } from './mcp-tools.js'
import { reportError } from './running.js'

const MCP_HELP = `usage: agentmsg mcp --dir D [--relay URL ...] [--ws] [--max-held N] [--ca F ...]
                    [--allow-private HOSTS]

Serve D's agent to an MCP client over stdio, listening on its relays. Tools: send, receive,
ack, contacts, identity; resources: agentmsg://conversations and
agentmsg://conversations/{conversation_id}. Each verified message is kept in D until the
client acks it: one not acked is handed over again after a restart. stdout is the MCP
channel; diagnostics go to stderr. Stops when the client closes stdin, or on Ctrl-C or
SIGTERM (exit 0). While it runs, it does agentmsg send, identity, rotate and contacts on D.
  --relay URL      relays to listen on (remembered in D; default: the ones D remembers)
  --ws             stream over WebSocket instead of SSE
  --max-held N     messages D keeps until acked (default ${DEFAULT_MAX_HELD}; at most 64 MiB): when
                   full, new messages wait in the relay until the client acks some
  --ca F, --allow-private HOSTS   as for agentmsg send

example (what an MCP client's configuration runs):
  agentmsg mcp --dir ./alice --relay https://127.0.0.1:9443 \\
      --ca "$AGENTMSG_HOME/dev-ca/ca.pem" --allow-private 127.0.0.1
`

const MCP_FLAGS = {
  dir: { type: 'string' },
  relay: { type: 'string', multiple: true },
  ws: { type: 'boolean' },
  'max-held': { type: 'string' },
  ca: { type: 'string', multiple: true },
  'allow-private': { type: 'string', multiple: true },
} as const

/** A request line the MCP client sends is at most this long: a message's text, escaped. */
const MAX_LINE_BYTES = 8 * 1024 * 1024

export const runMcp = command(MCP_HELP, MCP_FLAGS, async ({ values }) => {
  const dir = values.dir!
  const given = relayFlags('mcp', values.relay)
  const max = Number(values['max-held'] ?? DEFAULT_MAX_HELD)
  if (!(Number.isInteger(max) && max >= 1 && max <= 1_000_000))
    throw usageError('mcp', `--max-held ${values['max-held']}: a number from 1 to 1000000`)
  const network = await networkFlags(values)
  // stdout is the MCP channel: a library's console.log must not end up on it.
  console.log = console.info = console.debug = console.error
  const { storage, agentId, identity } = await openAgentDir(dir)
  let agent: NodeAgent
  let mailbox: Mailbox
  let relays: string[]
  try {
    relays = given.length ? given : await storedRelays(storage, identity)
    if (relays.length === 0)
      throw usageError('mcp', `${dir} remembers no relay: pass --relay URL (remembered after)`)
    mailbox = await Mailbox.open(storage, max)
    const mode = values.ws ? 'ws' : 'sse'
    agent = await createNodeAgent({ storage, relays, ...network, onError: reportError, mode })
    if (given.length) await rememberRelays(storage, relays)
  } catch (error) {
    await storage.close?.()
    throw error
  }
  agent.on('message', (m) => mailbox.hold(m))
  const control = await serveControl(dir, (r) => perform(agent, storage, r as AgentRequest), info)

  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  const server = createMcpServer(agent, storage, mailbox, manifest.version)
  const transport = new StdioServerTransport(process.stdin, process.stdout, {
    maxBufferSize: MAX_LINE_BYTES,
  })
  transport.onerror = reportError
  relabelInputErrors(transport)
  const closed = new Promise<string>((resolve) => {
    transport.onclose = () => resolve('the MCP connection closed')
    process.stdin.once('end', () => resolve('the MCP client closed stdin'))
  })
  await server.connect(transport)
  info(`${agentId} serving MCP on stdio, listening on ${relays.join(' ')}`)
  info(`${await Promise.race([closed, untilSignal()])}: stopping`)

  mailbox.stop()
  await control?.close()
  await server.close().catch(() => {})
  // A listener waiting for room never returns (its message stays in D for the next run), and
  // the agent's close waits for it: then stop without it, the store closed (its lock released).
  const parked = await Promise.race([
    agent.close().then(() => false, reportError),
    mailbox.parked.then(() => true),
  ])
  await storage.close?.()
  if (parked) process.exit(0)
  return 0
})

/**
 * Input a tool's schema refuses is a tool error the SDK words `MCP error -32602: Input
 * validation error: …`: here it reads `invalid_input: …`, as every other refusal of input does.
 */
function relabelInputErrors(transport: StdioServerTransport): void {
  const send = transport.send.bind(transport)
  transport.send = (message) => {
    const { result } = message as { result?: { isError?: unknown; content?: unknown } }
    const first = result?.isError === true && Array.isArray(result.content) && result.content[0]
    if (first && typeof first.text === 'string')
      first.text = first.text.replace(
        /^MCP error -32602: Input validation error: /,
        'invalid_input: ',
      )
    return send(message)
  }
}
