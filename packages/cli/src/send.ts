import { open } from 'node:fs/promises'
import type { Content, SendOptions, SendResult } from '@agentmsg/client/node'
import { PROFILE } from '@agentmsg/core'
import { onAgent } from './agent-ops.js'
import {
  allowList,
  inputError,
  parseFlags,
  readCaFiles,
  relayFlags,
  runCommand,
  usageError,
} from './command.js'

export const SEND_HELP = `usage: agentmsg send --dir D --to ID (--text T | --json FILE) [--relay URL ...]
                     [--conversation C] [--route auto|direct|relay] [--seal | --plaintext]
                     [--ca F ...] [--allow-private HOSTS] [--format text|json]

Send one message as the agent in D and print one line: accepted or pending, the message id,
the route (relay URL or direct), whether the body was sealed, the conversation. The route is
chosen as the client chooses it: ID's inbox first (URL agents), then its relays.
  --relay URL      relays where ID can be reached (a did:key has no inbox: pass its relay)
  --conversation C continue conversation C
  --route          force direct (inbox) or relay delivery
  --seal           also seal direct deliveries (bodies through relays are sealed for ID by
                   default, PROFILE §8); fails when ID's key is unknown
  --plaintext      send in plaintext when ID's key is unknown, instead of failing
  --json FILE      the file holds one JSON value (at most 1 MiB), sent as one data part with
                   content type application/json
  --ca F           trust this CA too (a dev server's: $AGENTMSG_HOME/dev-ca/ca.pem)
  --allow-private  hosts or ranges on private or loopback addresses it may connect to
  --format json    print {status, message_id, conversation_id, route, relay_url, transport,
                   sealed} instead
"pending": the inbox did not answer; the message stays in D's outbox and is retried (up to
24 h) while an agentmsg command has D open. While an agentmsg inbox or listen runs on D, that
process sends it (with its own --ca and --allow-private).
Exit 2: usage and input errors (nothing was sent); 1: sending failed (the PROFILE §6 code,
e.g. not_found, unavailable, forbidden; no_identity; in_use; failed).

examples:
  agentmsg send --dir ./alice --to https://127.0.0.1:8444 --text "hello" \\
      --ca "$AGENTMSG_HOME/dev-ca/ca.pem" --allow-private 127.0.0.1
  agentmsg send --dir ./bob --to did:key:z6Mk… --relay https://127.0.0.1:9443 --text "hi" \\
      --ca "$AGENTMSG_HOME/dev-ca/ca.pem" --allow-private 127.0.0.1
`

/** A JSON value, as a data part carries it. */
type JsonValue = Extract<Exclude<Content, string>['parts'][number], { type: 'data' }>['data']

/** The largest `--json` file read: a bigger one cannot fit a message (PROFILE §6). */
const MAX_JSON_FILE_BYTES = PROFILE.maxMessageBytes

const usage = (message: string) => usageError('send', message)

interface SendFlags {
  dir: string
  to: string
  content: Content
  options: SendOptions
  ca: string[]
  allowPrivate: string[]
  format: 'text' | 'json'
}

/** `agentmsg send`: resolves with the exit code; every failure is one stderr line. */
export function runSendCommand(argv: string[]): Promise<number> {
  return runCommand(SEND_HELP, argv, async () => {
    const flags = await parseSendArgs(argv)
    const result = await send(flags)
    process.stdout.write(`${flags.format === 'json' ? asJson(result) : asText(result, flags)}\n`)
    return 0
  })
}

/** The flags, checked and read (`--json` file, `--ca` files). */
async function parseSendArgs(argv: string[]): Promise<SendFlags> {
  const { values } = parseFlags('send', argv, {
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
  })
  if (!values.dir) throw usage('send needs --dir D')
  if (!values.to) throw usage('send needs --to ID')
  if ((values.text === undefined) === (values.json === undefined))
    throw usage('send needs one of --text T or --json FILE')
  const route = values.route ?? 'auto'
  if (route !== 'auto' && route !== 'direct' && route !== 'relay')
    throw usage(`--route ${route}: use auto, direct or relay`)
  if (values.seal && values.plaintext)
    throw usage('--seal and --plaintext contradict each other: pass one')
  const format = values.format ?? 'text'
  if (format !== 'text' && format !== 'json') throw usage(`--format ${format}: use text or json`)

  const content: Content =
    values.text !== undefined
      ? values.text
      : { parts: [{ type: 'data', data: await readJsonFile(values.json!) }] }
  const relays = relayFlags('send', values.relay)
  return {
    dir: values.dir,
    to: values.to,
    content,
    options: {
      route,
      ...(relays.length ? { relays } : {}),
      ...(values.conversation !== undefined ? { conversationId: values.conversation } : {}),
      ...(values.seal ? { seal: true } : {}),
      ...(values.plaintext ? { allowPlaintext: true } : {}),
    },
    ca: await readCaFiles(values.ca),
    allowPrivate: allowList(values['allow-private']),
    format,
  }
}

/**
 * The one JSON value in `file`: read up to the cap (a FIFO or a device has no size to check
 * first), strict UTF-8, parsed as a whole.
 */
async function readJsonFile(file: string): Promise<JsonValue> {
  let bytes: Buffer
  try {
    const handle = await open(file, 'r')
    try {
      const buffer = Buffer.alloc(MAX_JSON_FILE_BYTES + 1)
      let length = 0
      while (length < buffer.length) {
        const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null)
        if (bytesRead === 0) break
        length += bytesRead
      }
      bytes = buffer.subarray(0, length)
    } finally {
      await handle.close()
    }
  } catch (e) {
    throw inputError(`--json ${file}: ${(e as Error).message}`)
  }
  if (bytes.length > MAX_JSON_FILE_BYTES)
    throw inputError(`--json ${file}: over ${MAX_JSON_FILE_BYTES} bytes (what a message holds)`)
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as JsonValue
  } catch (e) {
    throw inputError(`--json ${file}: not JSON (${(e as Error).message})`)
  }
}

/**
 * Send once as D's agent: opened send-only for it (pending deliveries stay in D's outbox), or
 * by the `agentmsg inbox`/`listen` process that holds D.
 */
async function send(flags: SendFlags): Promise<SendResult> {
  const request = {
    op: 'send' as const,
    to: flags.to,
    content: flags.content,
    options: flags.options,
  }
  const result = await onAgent(flags.dir, request, {
    ca: flags.ca,
    allowPrivate: flags.allowPrivate,
  })
  return result as SendResult
}

function asText(r: SendResult, flags: SendFlags): string {
  const via = r.route === 'relay' ? `via relay ${r.relayUrl ?? '(unknown)'}` : 'direct'
  const line = `${r.pending ? 'pending' : 'accepted'} ${r.messageId} ${via}, ${r.sealed ? 'sealed' : 'not sealed'}, conversation ${r.conversationId}`
  return r.pending
    ? `${line}: the inbox did not answer; kept in ${flags.dir}'s outbox and retried (up to 24 h) while an agentmsg command has ${flags.dir} open`
    : line
}

function asJson(r: SendResult): string {
  return JSON.stringify({
    status: r.pending ? 'pending' : 'accepted',
    message_id: r.messageId,
    conversation_id: r.conversationId,
    route: r.route,
    ...(r.relayUrl !== undefined ? { relay_url: r.relayUrl } : {}),
    transport: r.transport,
    sealed: r.sealed,
  })
}
