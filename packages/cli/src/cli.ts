#!/usr/bin/env node
/**
 * `agentmsg` — the command line. Commands:
 *   agentmsg init  --dir D [--url https://host:port] [--display NAME]
 *   agentmsg inbox --dir D --port P [--host H] [--dev-tls | --tls-cert F --tls-key F]
 *   agentmsg send  --dir D --to ID (--text T | --json FILE) [--relay URL ...] [--conversation C]
 *                  [--route auto|direct|relay] [--seal | --plaintext] [--ca F ...]
 *                  [--allow-private HOSTS] [--format text|json]
 *   agentmsg relay --data D [--host H] [--port P] [--public-url U] [--dev-tls | --tls-cert F --tls-key F]
 *
 * `send` and `relay` parse their own flags and report their own errors (exit 2: usage).
 */
import { parseArgs } from 'node:util'
import { runInbox } from './inbox.js'
import { runInit } from './init.js'
import { runSendCommand, SEND_USAGE } from './send.js'

const USAGE = `usage:
  agentmsg init  --dir D [--url https://host:port] [--display NAME] [--force]
      create an identity in D (did:key by default; a URL agent with --url). D is an
      @agentmsg/storage-fs store: createAgent({ storage: await fsStorage({ dir: D }) }) is
      the same agent, and keeps its replay and auth-level state there
  agentmsg inbox --dir D --port P [--host H] [--dev-tls | --tls-cert F --tls-key F]
                 [--allow-private HOSTS] [--ca F]
      serve the agent's inbox, identity and capabilities over HTTPS; print each accepted,
      verified message as one JSON line on stdout (with "sealed": whether its body came
      sealed, PROFILE §8; "message" carries it opened)
${SEND_USAGE}  agentmsg relay --data D [--host H] [--port P] [--public-url U]
                 [--dev-tls | --tls-cert F --tls-key F] [--allow-private HOSTS]
      run a relay (store-and-forward, pub/sub, SSE/WebSocket/webhook push) on SQLite in D
`

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  if (command === '--help' || command === '-h') {
    process.stdout.write(USAGE)
    return 0
  }
  // The relay command has its own flags and lives in @agentmsg/relay (loaded only when used).
  if (command === 'relay') return (await import('@agentmsg/relay')).runRelayCommand(rest)
  if (command === 'send') return runSendCommand(rest)
  const { values } = parseArgs({
    args: rest,
    options: {
      dir: { type: 'string' },
      url: { type: 'string' },
      display: { type: 'string' },
      force: { type: 'boolean' },
      port: { type: 'string' },
      host: { type: 'string' },
      'dev-tls': { type: 'boolean' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      'allow-private': { type: 'string' },
      ca: { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  })
  if (values.help || command === undefined || command === 'help') {
    process.stdout.write(USAGE)
    return command === undefined ? 2 : 0
  }
  switch (command) {
    case 'init':
      return runInit(values)
    case 'inbox':
      return runInbox(values)
    default:
      process.stderr.write(`agentmsg: unknown command "${command}"\n${USAGE}`)
      return 2
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exitCode = code
  },
  (err: unknown) => {
    process.stderr.write(`agentmsg: ${err instanceof Error ? err.message : String(err)}\n`)
    process.exitCode = 1
  },
)
