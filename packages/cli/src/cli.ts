#!/usr/bin/env node
/**
 * `agentmsg` — the command line, a thin shell over `createNodeAgent` (@agentmsg/client/node) and
 * `fsStorage` (@agentmsg/storage-fs). One file per command; what they share is in command.ts.
 */
import { readFileSync } from 'node:fs'
import { CliError, errorLine } from './command.js'
import { runContacts } from './contacts.js'
import { runGroup } from './group.js'
import { runIdentity, runRotate } from './identity.js'
import { runInbox } from './inbox.js'
import { runInit } from './init.js'
import { runListen } from './listen.js'
import { runPublish } from './publish.js'
import { runSendCommand } from './send.js'
import { runSubscribe, runUnsubscribe } from './subscribe.js'

const HELP = `usage: agentmsg <command> [flags]      (agentmsg <command> --help: its flags and an example)

commands:
  init      create an identity in a directory (did:key, or a URL agent with --url)
  identity  print the identity: agent id, key, fingerprint, public key, relays
  send      send one message (to an inbox, or through relays)
  listen    a relay-only agent: print each verified message, acknowledge it once printed
  inbox     serve the agent's HTTPS inbox and identity document; print what arrives
  contacts  list, pin, introduce (with a token) or remove contacts
  subscribe  subscribe to a topic on the agent's relays (listen then prints its messages)
  unsubscribe  end a topic subscription
  publish   publish to a topic, sealed for its members (or --plaintext)
  group     the member list of a topic kept in the directory: list, add, remove
  rotate    URL agents: a new active key
  relay     run a relay on SQLite
  doctor    check a URL agent or relay: TLS, endpoints, document, clock, relays
  dev-ca    this machine's development CA: its path; trust it in the OS and browsers
  mcp       serve the agent to an MCP client over stdio: send, receive, ack, contacts, identity

  --version  the version;  --help, -h  this help

An agent directory D is an @agentmsg/storage-fs store: createAgent({ storage: await
fsStorage({ dir: D }) }) is the same agent. Dev servers (--dev-tls) use this machine's dev CA:
clients pass --ca "$(agentmsg dev-ca path)" ($AGENTMSG_HOME/dev-ca/ca.pem, default ~/.agentmsg).
Errors: one line on stderr, "agentmsg: <code>: <message — what to do>".
Exit codes: 0 done; 1 failed (network, refused, the directory's state); 2 usage or input error.

example (a did:key listens on a relay, another agent sends to it):
  CA="$(agentmsg dev-ca path)"
  agentmsg relay  --data ./relay --port 9443 --dev-tls &
  agentmsg init   --dir ./alice
  agentmsg listen --dir ./alice --relay https://127.0.0.1:9443 --ca "$CA" --allow-private 127.0.0.1 &
  agentmsg init   --dir ./carol
  agentmsg send   --dir ./carol --to "$(agentmsg identity --dir ./alice --json | jq -r .agent_id)" \\
      --relay https://127.0.0.1:9443 --text hello --ca "$CA" --allow-private 127.0.0.1
`

const COMMANDS: Record<string, (argv: string[]) => Promise<number>> = {
  init: runInit,
  identity: runIdentity,
  send: runSendCommand,
  listen: runListen,
  inbox: runInbox,
  contacts: runContacts,
  subscribe: runSubscribe,
  unsubscribe: runUnsubscribe,
  publish: runPublish,
  group: runGroup,
  rotate: runRotate,
  // The relay has its own flags (relay/); it and @agentmsg/relay are loaded only when used.
  relay: async (argv) => (await import('./relay/command.js')).runRelayCommand(argv),
  doctor: async (argv) => (await import('./doctor.js')).runDoctor(argv),
  'dev-ca': async (argv) => (await import('./dev-ca.js')).runDevCa(argv),
  // The MCP SDK is loaded only by `agentmsg mcp`.
  mcp: async (argv) => (await import('./mcp.js')).runMcp(argv),
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    // `agentmsg help send` is `agentmsg send --help`.
    const topic = command === 'help' ? rest[0] : undefined
    if (topic !== undefined && COMMANDS[topic]) return COMMANDS[topic]!(['--help'])
    process.stdout.write(HELP)
    return 0
  }
  if (command === '--version' || command === '-v') {
    // package.json sits one level above both src/ and dist/.
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
    process.stdout.write(`${manifest.version}\n`)
    return 0
  }
  if (!Object.hasOwn(COMMANDS, command)) {
    const message = `${JSON.stringify(command)} is not a command — agentmsg --help lists them`
    throw new CliError('unknown_command', message, 2)
  }
  return COMMANDS[command]!(rest)
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exitCode = code
  },
  (error: unknown) => {
    const { line, exitCode } = errorLine(error)
    process.stderr.write(line)
    process.exitCode = exitCode
  },
)
