/**
 * What every `agentmsg` command shares: flag parsing, `--help`, the one-line error format and
 * its exit codes, reading the files users name, and output that is safe to show in a terminal.
 *
 * Errors: exactly one line on stderr, `agentmsg: <code>: <message — what to do>`, never a stack
 * trace. Exit codes: 0 done, 1 runtime failure (network, refused, state of the directory),
 * 2 usage or input error (bad flags, unreadable or invalid input files; nothing was done).
 */
import { constants } from 'node:fs'
import { type FileHandle, open } from 'node:fs/promises'
import path from 'node:path'
import { type ParseArgsConfig, parseArgs } from 'node:util'
import { createAddressPolicy, type NodeAgentOptions, safeText } from '@agentmsg/client/node'
import { PROFILE } from '@agentmsg/core'
import { agentmsgHome } from '@agentmsg/dev-tls'

/** A failure a command reports as one line, with its exit code. */
export class CliError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly exitCode: 1 | 2 = 1,
    readonly detail?: string, // the whole chain of causes, for --verbose
  ) {
    super(message)
  }
}

/** A usage error (exit 2), pointing at the command's help. */
export const usageError = (command: string, message: string) =>
  new CliError('usage', `${message} — see agentmsg ${command} --help`, 2)
/** An input file or value that cannot be used (exit 2). */
export const inputError = (message: string) => new CliError('invalid_input', message, 2)

type Options = NonNullable<ParseArgsConfig['options']>
type Config<O extends Options> = { options: O; strict: true; allowPositionals: boolean }
type Body<O extends Options> = (parsed: ReturnType<typeof parseArgs<Config<O>>>) => Promise<number>

/** The one line for stderr: `agentmsg: <code>: <message>` (one line whatever the message held). */
export function errorLine(error: unknown): { line: string; exitCode: 1 | 2 } {
  const { code, message, exitCode } = describeError(error)
  return { line: `agentmsg: ${code}: ${oneLine(message)}\n`, exitCode }
}

/**
 * A command (its name is the one `help` starts with, `usage: agentmsg <name>`): `--help`/`-h`
 * prints `help` on stdout (exit 0); else `body` gets the parsed flags (usage errors as
 * {@link CliError}) and resolves with the exit code; any failure is one stderr line.
 */
export function command<O extends Options>(
  help: string,
  options: O,
  body: Body<O>,
  allowPositionals = false,
): (argv: string[]) => Promise<number> {
  const name = help.split(' ')[2]!
  return async (args) => {
    if (args.includes('--help') || args.includes('-h')) {
      process.stdout.write(help)
      return 0
    }
    try {
      let parsed: Parameters<Body<O>>[0]
      try {
        parsed = parseArgs({ args, options, strict: true, allowPositionals })
      } catch (error) {
        // Node's messages carry advice for programs ("place it after a '--'"); the first
        // sentence is what a person needs.
        throw usageError(name, (error as Error).message.split(/\.\s/)[0]!.replace(/\.$/, ''))
      }
      if ('dir' in options && !(parsed.values as { dir?: string }).dir)
        throw usageError(name, `${name} needs --dir D`)
      return await body(parsed)
    } catch (error) {
      const { line, exitCode } = errorLine(error)
      process.stderr.write(line)
      return exitCode
    }
  }
}

/** {@link command} for a command that takes arguments besides its flags. */
export const commandWithArgs = <O extends Options>(help: string, options: O, body: Body<O>) =>
  command(help, options, body, true)

/** A diagnostic line of a running command on stderr: human on a terminal, else one JSON object
 * as the relay's logs (pino's `level`, `time`, `msg`). */
export function info(text: string, level: 30 | 40 = 30): void {
  const line = process.stderr.isTTY
    ? `agentmsg: ${oneLine(text)}`
    : safeJson({ level, time: Date.now(), msg: text })
  process.stderr.write(`${line}\n`)
}

/** The code, message and exit code of any failure. */
export function describeError(error: unknown): { code: string; message: string; exitCode: 1 | 2 } {
  if (error instanceof CliError)
    return { code: error.code, message: error.message, exitCode: error.exitCode }
  const failure = (code: string, message: string) => ({ code, message, exitCode: 1 as const })
  const message = withCauses(error)
  const locked = /directory (.+) is locked by process (\d+)/.exec(message)
  if (locked) {
    return failure(
      'in_use',
      `${locked[1]} is in use by process ${locked[2]} (an agentmsg inbox, listen or mcp?) — stop it, or use another directory`,
    )
  }
  const { code, address, port } = (error ?? {}) as {
    code?: unknown
    address?: string
    port?: number
  }
  const where = port !== undefined ? ` ${address ?? ''}:${port}` : ''
  if (code === 'EADDRINUSE')
    return failure(
      'port_in_use',
      `the port${where} is in use — stop what holds it, or pass another --port`,
    )
  if (code === 'EACCES')
    return failure(
      'permission_denied',
      `no permission to listen on${where} — use a port above 1023`,
    )
  // AgentMsgError codes are PROFILE §6's, lower-case; Node's own (ENOENT, ERR_…) are not.
  const profileCode = typeof code === 'string' && /^[a-z_]+$/.test(code)
  return failure(profileCode ? code : 'failed', withHint(message))
}

/** The message with its causes: `fetch failed` alone hides why in `.cause.cause`. */
export function withCauses(error: unknown): string {
  const parts: string[] = []
  let current: unknown = error
  for (let depth = 0; current !== undefined && current !== null && depth < 5; depth++) {
    const text = current instanceof Error ? current.message : String(current)
    if (text && !parts.some((p) => p.includes(text))) parts.push(text)
    current = current instanceof Error ? current.cause : undefined
  }
  return parts.join(': ') || 'unknown error'
}

/** The client's hints name its options; here they are flags (a wording it lacks stays as is). */
const OPTION_FLAGS: Array<[string, string]> = [
  ['pass allowPlaintext: true', 'pass --plaintext'],
  ['pass seal: false', 'leave out --seal'],
  ['pass options.relays', 'pass --relay URL'],
]

/** The CA file to pass for a `--dev-tls` server, with `$AGENTMSG_HOME` as it is here. */
export const devCaFile = () => path.join(agentmsgHome(), 'dev-ca', 'ca.pem')

/** The message in the CLI's words, with what to do about the usual connection failures. */
function withHint(text: string): string {
  const message = OPTION_FLAGS.reduce((t, [option, flag]) => t.replace(option, flag), text)
  const tls =
    /self[- ]signed|unable to (verify|get local issuer)|certificate has expired|unknown ca|UNABLE_TO_|SELF_SIGNED|CERT_/i
  if (tls.test(message) && !message.includes('--ca'))
    return `${message} — pass the server's CA with --ca FILE (a dev server's: ${devCaFile()}, agentmsg dev-ca path)`
  if (/is not public unicast/.test(message) && !message.includes('--allow-private'))
    return `${message} — pass --allow-private HOST to reach a private or loopback address`
  return message
}

/** One line: line breaks folded, control characters escaped (peer text must not drive the terminal). */
export function oneLine(text: string): string {
  return safeText(text.replace(/\s*[\r\n]+\s*/g, ' '))
}

/** `value` as JSON on one line, peer strings escaped as for {@link oneLine} (the same value). */
export const safeJson = (value: unknown): string => safeText(JSON.stringify(value))

/** Caps of the files a user names: a PEM file or a config is a few KiB (the system roots are
 * always trusted, so no system bundle is passed); JSON input is at most what a message holds. */
export const MAX_SMALL_FILE_BYTES = 64 * 1024
export const MAX_JSON_FILE_BYTES = PROFILE.maxMessageBytes

/**
 * The text of a file the user named (`label`: its flag and name, for errors): a regular file
 * only, checked on the opened descriptor (a FIFO is opened non-blocking, so it is refused, not
 * waited on), and never more than `cap` + 1 bytes read. Exit 2 otherwise; errors never quote
 * the content (a secrets file passed by mistake stays unprinted).
 */
export async function readUserFile(label: string, file: string, cap: number): Promise<string> {
  const problem = (why: string) => inputError(`${label}: ${why}`)
  let handle: FileHandle | undefined
  try {
    handle = await open(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0))
    if (!(await handle.stat()).isFile())
      throw problem('not a regular file (a FIFO, device or directory) — pass a file')
    const bytes = Buffer.alloc(cap + 1)
    let length = 0
    while (length < bytes.length) {
      const { bytesRead } = await handle.read(bytes, length, bytes.length - length)
      if (bytesRead === 0) break
      length += bytesRead
    }
    if (length > cap) throw problem(`larger than ${cap} bytes`)
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, length))
  } catch (error) {
    throw error instanceof CliError ? error : problem(`cannot be read: ${(error as Error).message}`)
  } finally {
    await handle?.close()
  }
}

/** The JSON value of a file the user named ({@link readUserFile}); an error gives at most a
 * position, never the text (JSON.parse's messages quote it). */
export async function readJsonFile(label: string, file: string, cap: number): Promise<unknown> {
  const text = await readUserFile(label, file, cap)
  try {
    return JSON.parse(text)
  } catch (e) {
    const at = /at position (\d+)/.exec((e as Error).message)?.[1]
    throw inputError(`${label}: is not JSON${at ? ` (at position ${at})` : ''}`)
  }
}

/** The text of the PEM file a flag names (exit 2 when it cannot be read or lacks `marker`). */
export async function readPemFlag(
  flag: string,
  file: string,
  marker = '-----BEGIN',
): Promise<string> {
  const text = await readUserFile(`${flag} ${file}`, file, MAX_SMALL_FILE_BYTES)
  if (!text.includes(marker)) throw inputError(`${flag} ${file}: not a PEM file with ${marker}`)
  return text
}

/** The PEM text of each `--ca` file. */
export const readCaFiles = (files: readonly string[] | undefined): Promise<string[]> =>
  Promise.all(listFlag(files).map((f) => readPemFlag('--ca', f, '-----BEGIN CERTIFICATE-----')))

/** `--tls-cert F --tls-key F` read, or undefined for `--dev-tls` (https only: PROFILE §6). */
export async function tlsFlags(
  command: string,
  values: {
    'dev-tls'?: boolean | undefined
    'tls-cert'?: string | undefined
    'tls-key'?: string | undefined
  },
): Promise<{ cert: string; key: string } | undefined> {
  const { 'tls-cert': certFile, 'tls-key': keyFile } = values
  const hasCert = certFile !== undefined || keyFile !== undefined
  if (Boolean(values['dev-tls']) === hasCert || (hasCert && !(certFile && keyFile)))
    throw usageError(
      command,
      `${command} needs --dev-tls, or --tls-cert F and --tls-key F (https only, also in development)`,
    )
  if (!hasCert) return undefined
  return {
    cert: await readPemFlag('--tls-cert', certFile!),
    key: await readPemFlag('--tls-key', keyFile!),
  }
}

/** What a `--dev-tls` server prints: the one file its clients trust (the machine's dev CA). */
export const devTlsLine = (dev: { certFile: string; caFile: string }) =>
  `development CA: ${dev.caFile} (trust it: clients pass --ca ${dev.caFile}; this server's certificate: ${dev.certFile})`

/** A command's network: the `--ca` files; public unicast plus `--allow-private` (PROFILE §4, §6). */
export async function networkFlags(values: {
  ca?: string[]
  'allow-private'?: string[]
}): Promise<Pick<NodeAgentOptions, 'ca' | 'addressPolicy'>> {
  const ca = await readCaFiles(values.ca)
  const addressPolicy = createAddressPolicy({ allow: listFlag(values['allow-private']) })
  return ca.length ? { ca, addressPolicy } : { addressPolicy }
}

/** A repeatable flag that also takes `a,b`: the values, trimmed. */
export function listFlag(values: readonly string[] | undefined): string[] {
  return (values ?? []).flatMap((v) => v.split(',').map((s) => s.trim())).filter(Boolean)
}

/** `--relay` URLs: https only, also in development (PROFILE §9); exit 2 otherwise. */
export function relayFlags(command: string, values: readonly string[] | undefined): string[] {
  for (const url of values ?? []) {
    if (!/^https:\/\/[^/]/i.test(url))
      throw usageError(command, `--relay ${url}: a relay URL is https://host[:port][/path]`)
  }
  return [...(values ?? [])]
}

/** A TCP port flag (exit 2 when it is not one). */
export function portFlag(command: string, text: string): number {
  const port = /^[0-9]{1,5}$/.test(text) ? Number(text) : Number.NaN
  if (!(port >= 0 && port <= 65535)) throw usageError(command, `--port ${text} is not a port`)
  return port
}

/** Write `text` to stdout; resolves once it is handed to the OS (or rejects, e.g. EPIPE). */
export const writeOut = (text: string): Promise<void> =>
  new Promise((resolve, reject) => process.stdout.write(text, (e) => (e ? reject(e) : resolve())))

/** The first SIGINT or SIGTERM; the listeners stay, so the Ctrl-C npx forwards again does
 * not end the clean stop the first began. */
export function untilSignal(): Promise<string> {
  return new Promise((resolve) => {
    for (const s of ['SIGINT', 'SIGTERM'] as const) process.on(s, resolve)
  })
}
