import type { Content, SendOptions, SendResult } from '@agentmsg/client/node'
import { onAgent } from './agent-ops.js'
import {
  CliError,
  command,
  info,
  MAX_JSON_FILE_BYTES as MAX_JSON,
  networkFlags,
  readJsonFile,
  relayFlags,
  usageError,
  withCauses,
} from './command.js'

const SEND_HELP = `usage: agentmsg send --dir D --to ID (--text T | --json FILE) [--relay URL ...]
                     [--conversation C] [--route auto|direct|relay] [--seal | --plaintext]
                     [--ca F ...] [--allow-private HOSTS] [--format text|json] [--verbose]

Send one message as the agent in D (ID's inbox first, then its relays); print accepted or
pending, the message id, the route, sealed or not, the conversation. "pending": the inbox did
not answer or no relay took it now; D's outbox retries it (up to 24 h) while an agentmsg command
has D open.
  --relay URL      relays where ID can be reached (a did:key has no inbox: pass its relay)
  --conversation C continue conversation C
  --route          force direct (inbox) or relay delivery
  --seal           also seal direct deliveries (through relays bodies are sealed by default)
  --plaintext      send in plaintext when ID's key is unknown, instead of failing
  --json FILE      one JSON value (at most 1 MiB), sent as one application/json data part
  --ca F           trust this CA too (a dev server's: $AGENTMSG_HOME/dev-ca/ca.pem)
  --allow-private  hosts or ranges on private or loopback addresses it may connect to
  --format json    one JSON object: status, message_id, conversation_id, route, relay_url,
                   transport, sealed
  --verbose        on failure, also every cause (the line alone says what failed and why)

example:
  agentmsg send --dir ./bob --to did:key:z6Mk… --relay https://127.0.0.1:9443 --text "hi" \\
      --ca "$AGENTMSG_HOME/dev-ca/ca.pem" --allow-private 127.0.0.1
`

/** A JSON value, as a data part carries it. */
type JsonValue = Extract<Exclude<Content, string>['parts'][number], { type: 'data' }>['data']

const usage = (message: string) => usageError('send', message)

/** `agentmsg send`: resolves with the exit code; every failure is one stderr line. */
const SEND_FLAGS = {
  dir: { type: 'string' },
  to: { type: 'string' },
  text: { type: 'string' },
  json: { type: 'string' },
  relay: { type: 'string', multiple: true },
  conversation: { type: 'string' },
  route: { type: 'string' },
  seal: { type: 'boolean' },
  plaintext: { type: 'boolean' },
  ca: { type: 'string', multiple: true },
  'allow-private': { type: 'string', multiple: true },
  format: { type: 'string' },
  verbose: { type: 'boolean' },
} as const

export const runSendCommand = command(SEND_HELP, SEND_FLAGS, async ({ values }) => {
  const { to, text, json, route = 'auto', format = 'text' } = values
  const dir = values.dir!
  if (!to) throw usage('send needs --to ID')
  if ((text === undefined) === (json === undefined))
    throw usage('send needs one of --text T or --json FILE')
  if (route !== 'auto' && route !== 'direct' && route !== 'relay')
    throw usage(`--route ${route}: use auto, direct or relay`)
  if (values.seal && values.plaintext)
    throw usage('--seal and --plaintext contradict each other: pass one')
  if (format !== 'text' && format !== 'json') throw usage(`--format ${format}: use text or json`)
  const content: Content = text ?? {
    parts: [
      { type: 'data', data: (await readJsonFile(`--json ${json}`, json!, MAX_JSON)) as JsonValue },
    ],
  }
  const relays = relayFlags('send', values.relay)
  const options: SendOptions = {
    route,
    relays: relays.length ? relays : undefined,
    conversationId: values.conversation,
    seal: values.seal || undefined,
    allowPlaintext: values.plaintext || undefined,
  }
  const network = await networkFlags(values)
  // D's agent, opened send-only for it (pending deliveries stay in D's outbox), or the
  // `agentmsg inbox`/`listen` process that holds D.
  const request = { op: 'send', to, content, options } as const
  // Ctrl-C stops the send (a second one ends the process): the client then keeps nothing in
  // the outbox, which the line says.
  const stop = new AbortController()
  const interrupted = () =>
    stop.abort(
      new CliError(
        'interrupted',
        `stopped before a target took it: nothing is kept in ${dir}'s outbox — send it again`,
      ),
    )
  process.once('SIGINT', interrupted)
  const r = (await onAgent(dir, request, network, stop.signal)
    .catch((error: unknown) => {
      // The line says what failed and what to do; --verbose adds every cause before it.
      if (values.verbose) info(`detail: ${(error as CliError).detail ?? withCauses(error)}`)
      throw error
    })
    .finally(() => process.off('SIGINT', interrupted))) as SendResult
  process.stdout.write(`${format === 'json' ? asJson(r) : asText(r, dir)}\n`)
  return 0
})

/** `why`: what the relays of a pending send answered, with what to do (failure.ts). */
function asText(r: SendResult & { why?: string }, dir: string): string {
  const relay = r.relayUrl ? `via relay ${r.relayUrl}` : 'via relays'
  const via = r.route === 'relay' ? relay : 'direct'
  const line = `${r.pending ? 'pending' : 'accepted'} ${r.messageId} ${via}, ${r.sealed ? 'sealed' : 'not sealed'}, conversation ${r.conversationId}`
  const why = r.why ?? (r.route === 'relay' ? 'no relay took it now' : 'the inbox did not answer')
  return r.pending
    ? `${line}: ${why}; kept in ${dir}'s outbox and retried (up to 24 h) while an agentmsg command has ${dir} open`
    : line
}

/** What `send --format json` prints and the MCP `send` tool returns. */
export const sendSummary = (r: SendResult) => ({
  status: r.pending ? 'pending' : 'accepted',
  message_id: r.messageId,
  conversation_id: r.conversationId,
  route: r.route,
  relay_url: r.relayUrl,
  transport: r.transport,
  sealed: r.sealed,
})

const asJson = (r: SendResult): string => JSON.stringify(sendSummary(r))
