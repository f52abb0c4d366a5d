import { open, readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import {
  type Content,
  createAddressPolicy,
  createNodeAgent,
  type SendOptions,
  type SendResult,
} from '@agentmsg/client/node'
import { openAgentDir } from './agent-dir.js'

export const SEND_USAGE = `  agentmsg send --dir D --to ID (--text T | --json FILE) [--relay URL ...]
                [--conversation C] [--route auto|direct|relay] [--seal | --plaintext]
                [--ca F ...] [--allow-private HOSTS] [--format text|json]
      send one message as the agent in D (send-only: it does not listen) and print one
      line: accepted or pending, the message id, the route (relay URL or direct), whether
      the body was sealed, the conversation. --relay names relays where ID can be reached.
      Bodies through relays are sealed for ID by default (PROFILE §8); --seal also seals
      direct deliveries (fails when ID's key is unknown); --plaintext sends in plaintext
      when ID's key is unknown instead of failing. --json FILE: the file holds one JSON
      value (at most 1 MiB), sent as one data part with content type application/json.
      --format json prints {status, message_id, conversation_id, route, relay_url,
      transport, sealed} instead. "pending": the inbox did not answer; the message stays in
      D's outbox and is retried (up to 24 h) while an agentmsg command has D open.
      Errors: one line "agentmsg: <code>: <message>" on stderr; exit 2 for usage and input
      errors (nothing was sent), 1 when sending failed (<code>: the PROFILE §6 code, e.g.
      not_found, unavailable, forbidden; no_identity; or failed)
`

/** A JSON value, as a data part carries it. */
type JsonValue = Extract<Exclude<Content, string>['parts'][number], { type: 'data' }>['data']

/** The largest `--json` file read: a bigger one cannot fit a message (PROFILE §6: 1 MiB). */
const MAX_JSON_FILE_BYTES = 1_048_576

/** A failure the command reports as one line, with its exit code (2: usage or input). */
class SendCommandError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly exitCode: 1 | 2,
  ) {
    super(message)
  }
}

const usage = (message: string) => new SendCommandError('usage', message, 2)
const badInput = (message: string) => new SendCommandError('invalid_input', message, 2)

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
export async function runSendCommand(argv: string[]): Promise<number> {
  try {
    const flags = await parseSendArgs(argv)
    if (flags === undefined) {
      process.stdout.write(`usage:\n${SEND_USAGE}`)
      return 0
    }
    const result = await send(flags)
    process.stdout.write(`${flags.format === 'json' ? asJson(result) : asText(result, flags)}\n`)
    return 0
  } catch (error) {
    const { code, message, exitCode } = described(error)
    // One line whatever the error says (causes and peer messages may span lines).
    process.stderr.write(`agentmsg: ${code}: ${message.replace(/\s*\n\s*/g, ' ')}\n`)
    return exitCode
  }
}

/** The flags, checked and read (`--json` file, `--ca` files); `undefined` for `--help`. */
async function parseSendArgs(argv: string[]): Promise<SendFlags | undefined> {
  let values
  try {
    ;({ values } = parseArgs({
      args: argv,
      options: {
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
        'allow-private': { type: 'string' },
        format: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }))
  } catch (error) {
    throw usage(error instanceof Error ? error.message : String(error))
  }
  if (values.help) return undefined
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
  const ca = await Promise.all(
    (values.ca ?? []).map((file) =>
      readFile(file, 'utf8').catch((e: unknown) => {
        throw badInput(`--ca ${file}: ${(e as Error).message}`)
      }),
    ),
  )
  const relays = values.relay ?? []
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
    ca,
    allowPrivate: (values['allow-private'] ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
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
    throw badInput(`--json ${file}: ${(e as Error).message}`)
  }
  if (bytes.length > MAX_JSON_FILE_BYTES)
    throw badInput(`--json ${file}: over ${MAX_JSON_FILE_BYTES} bytes (a message holds 1 MiB)`)
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as JsonValue
  } catch (e) {
    throw badInput(`--json ${file}: not JSON (${(e as Error).message})`)
  }
}

/** Open D's agent send-only, send once, close it (pending deliveries stay in D's outbox). */
async function send(flags: SendFlags): Promise<SendResult> {
  let opened
  try {
    opened = await openAgentDir(flags.dir)
  } catch (e) {
    const message = (e as Error).message
    throw new SendCommandError(
      /holds no identity/.test(message) ? 'no_identity' : 'failed',
      message,
      1,
    )
  }
  const { storage } = opened
  try {
    const agent = await createNodeAgent({
      storage,
      sendOnly: true,
      // https only, public unicast plus what --allow-private names (PROFILE §4, §6).
      addressPolicy: createAddressPolicy({ allow: flags.allowPrivate }),
      ...(flags.ca.length ? { ca: flags.ca } : {}),
      // Reports of deliveries resumed from earlier runs are not this send's outcome; the
      // send's own result or error is what the command prints.
      onError: () => {},
    })
    try {
      return await agent.send(flags.to, flags.content, flags.options)
    } finally {
      await agent.close().catch(() => {})
    }
  } finally {
    await storage.close?.()
  }
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

/** The client's hints name its options; here they are flags (a wording it lacks stays as is). */
const OPTION_FLAGS: Array<[string, string]> = [
  ['pass allowPlaintext: true', 'pass --plaintext'],
  ['pass seal: false', 'leave out --seal'],
  ['pass options.relays', 'pass --relay URL'],
]
const cliWords = (message: string) =>
  OPTION_FLAGS.reduce((text, [option, flag]) => text.replace(option, flag), message)

/** The code, message and exit code of a failure: the client's PROFILE §6 code when it has one. */
function described(error: unknown): { code: string; message: string; exitCode: number } {
  if (error instanceof SendCommandError)
    return { code: error.code, message: error.message, exitCode: error.exitCode }
  const message = cliWords(error instanceof Error ? error.message : String(error))
  // AgentMsgError codes are PROFILE §6's, lower-case; Node's own (ENOENT, ERR_…) are not.
  const code = (error as { code?: unknown } | null)?.code
  const profileCode = typeof code === 'string' && /^[a-z_]+$/.test(code)
  return { code: profileCode ? code : 'failed', message, exitCode: 1 }
}
