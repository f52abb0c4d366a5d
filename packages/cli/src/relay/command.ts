/**
 * `agentmsg relay`: run a relay from the command line (its flags: config.ts). Errors are one
 * line `agentmsg: <code>: <message — what to do>`, exit 2 for usage and input errors (one line
 * per problem of a config file), 1 when the relay cannot start. Once it listens, it logs JSON
 * lines (pino) on stderr.
 */
import path from 'node:path'
import { type ParseArgsConfig, parseArgs } from 'node:util'
import { loadDevCertificate } from '@agentmsg/dev-tls'
import {
  type RelayServer,
  type RelayStore,
  type ServeRelayOptions,
  serveRelay,
} from '@agentmsg/relay'
import {
  CliError,
  devTlsLine,
  errorLine,
  listFlag,
  oneLine,
  readCaFiles,
  tlsFlags,
  untilSignal,
  usageError,
} from '../command.js'
import { loadRelayConfig, RelayConfigError, setPath } from './config.js'
import { check, RELAY_USAGE, SETTINGS } from './settings.js'

/** Where the command writes and how it waits; replaceable for tests. */
export interface RelayCommandIo {
  stdout?: (text: string) => void
  stderr?: (text: string) => void
  /** Resolves when the relay should stop. @default the first SIGTERM or SIGINT */
  stopSignal?: (server: RelayServer) => Promise<string>
  /** Called once the relay listens. */
  onListening?: (server: RelayServer) => void
  /** Ends the process when a stop overran `--shutdown-timeout`. @default process.exit */
  exit?: (code: number) => void
}

/** Parsed `relay` flags: serveRelay's options, the PostgreSQL store if any, the stop bound. */
export type RelayCommandOptions = ServeRelayOptions & {
  postgres?: { url: string; schema?: string }
  shutdownTimeoutMs: number
}

const usage = (message: string) => usageError('relay', message)

const FLAGS: ParseArgsConfig['options'] = { help: { type: 'boolean', short: 'h' } }
for (const { flag, boolean, multiple } of SETTINGS) {
  if (flag) FLAGS[flag] = { type: boolean ? 'boolean' : 'string', ...(multiple && { multiple }) }
}

/** Parsed `relay` flags; undefined for --help. */
export async function relayOptionsFromArgs(
  argv: string[],
  log: (text: string) => void,
): Promise<RelayCommandOptions | undefined> {
  let values: Record<string, string | boolean | Array<string | boolean> | undefined>
  try {
    values = parseArgs({ args: argv, options: FLAGS, strict: true }).values
  } catch (e) {
    throw usage((e as Error).message.split(/\.\s/)[0]!.replace(/\.$/, ''))
  }
  if (values.help) return undefined
  const dataDir = values.data as string | undefined
  if (!dataDir) throw usage('relay needs --data DIR')
  const tls = await tlsFlags('relay', values)
  if (values['metrics-host'] !== undefined && values['metrics-port'] === undefined) {
    throw usage('--metrics-host needs --metrics-port P')
  }
  if (values['store-schema'] !== undefined && values.store === undefined) {
    throw usage('--store-schema needs --store postgres://…')
  }
  const list = (flag: string) => listFlag(values[flag] as string[] | undefined)
  const given: Array<[string, unknown]> = []
  for (const s of SETTINGS) {
    const text = s.flag && values[s.flag]
    const to = s.to ?? s.key
    if (text === undefined || to === undefined) continue
    const raw = s.multiple ? list(s.flag!) : String(text).trim()
    const value = typeof raw === 'string' && /^[0-9]{1,9}$/.test(raw) ? Number(raw) : raw
    const parsed = s.kind ? check(s.kind, value) : { value: text }
    if ('problem' in parsed)
      throw usage(`--${s.flag} ${text} is not a ${s.kind!.noun}: ${parsed.problem}`)
    given.push([to, parsed.value])
  }
  // After the flags' own checks: a usage error is told before the file's problems.
  const file = typeof values.config === 'string' ? await loadRelayConfig(values.config) : {}
  const options: Record<string, unknown> = {
    host: '127.0.0.1',
    port: 8443,
    logLevel: 'info',
    shutdownTimeoutMs: 10_000,
    ...file,
  }
  for (const [to, value] of given) setPath(options, to, value)
  if (!tls) {
    // In the data directory, made on first use and kept across restarts (key 0600); the
    // machine's development CA issued it: one file to trust for every dev relay and inbox.
    const dev = await loadDevCertificate(path.join(dataDir, 'dev-tls'))
    options.tls = { cert: dev.cert, key: dev.key }
    log(devTlsLine(dev))
  } else options.tls = tls
  // Extra CAs for what the relay fetches (identity documents, webhooks): PROFILE §6 verifies
  // every certificate, so a dev inbox's CA is added here, never verification turned off. Read
  // after --dev-tls made the machine's dev CA, so a first dev relay may be told to trust it.
  const ca = await readCaFiles(list('ca'))
  if (ca.length > 0) options.ca = ca
  const allowPrivate = list('allow-private')
  if (allowPrivate.length > 0) options.allowPrivate = allowPrivate
  // Connections still open halfway through the bound are cut, leaving time for the store.
  options.closeTimeoutMs = (options.shutdownTimeoutMs as number) / 2
  return options as unknown as RelayCommandOptions
}

/**
 * Run `agentmsg relay` with `argv` (the arguments after `relay`). Resolves with the exit code
 * once the relay stopped: 0 after SIGTERM/SIGINT and a graceful close, 2 for usage errors.
 */
export async function runRelayCommand(argv: string[], io: RelayCommandIo = {}): Promise<number> {
  const err = io.stderr ?? ((t: string) => process.stderr.write(t))
  const fail = (error: unknown) => {
    const { line, exitCode } = errorLine(error)
    err(line)
    return exitCode
  }
  // Held until the relay listens, so a failure to start stays one line.
  const early: string[] = []
  let options: RelayCommandOptions | undefined
  try {
    options = await relayOptionsFromArgs(argv, (text) => void early.push(text))
  } catch (e) {
    if (e instanceof RelayConfigError) {
      // One line per problem, so all of them are fixed in one go.
      for (const problem of e.problems)
        fail(new CliError('invalid_config', `${e.file}: ${problem}`, 2))
      return 2
    }
    return fail(e)
  }
  if (!options) {
    ;(io.stdout ?? ((t: string) => process.stdout.write(t)))(RELAY_USAGE)
    return 0
  }
  const { postgres, shutdownTimeoutMs, ...serveOptions } = options
  let server: RelayServer
  let store: RelayStore | undefined
  try {
    if (postgres) {
      // Loaded only when asked for, so a SQLite relay never loads `pg`.
      const { openPostgresRelayStore } = await import('@agentmsg/relay/postgres')
      const { url: connectionString, schema } = postgres
      store = await openPostgresRelayStore({ connectionString, schema, quota: serveOptions.quota })
    }
    // From here on, JSON lines (pino) on the command's stderr; human lines on a terminal.
    const human = !io.stderr && process.stderr.isTTY
    const logDestination = { write: (line: string) => void err(human ? humanLine(line) : line) }
    server = await serveRelay({ ...serveOptions, logDestination, store })
  } catch (e) {
    await store?.close().catch(() => undefined)
    const { name, code, message = String(e) } = e as Partial<NodeJS.ErrnoException>
    const inUse = (what: string, flag: string) =>
      fail(
        new CliError(
          'port_in_use',
          `${what} is in use — stop what holds it, or pass another ${flag}`,
        ),
      )
    // The metrics listener's error names its port (`metrics port P on H is in use`).
    if (name === 'MetricsListenError' && code === 'EADDRINUSE') {
      return inUse(message.replace(/ is in use$/, ''), '--metrics-port')
    }
    if (code === 'EADDRINUSE') return inUse(`port ${options.port} on ${options.host}`, '--port')
    return fail(e)
  }
  const logger = server.logger!
  for (const line of early) logger.info(line)
  // The store as it may be logged: never the user or password of its URL.
  const db = postgres && new URL(postgres.url)
  const where = db
    ? `PostgreSQL ${db.host}${db.pathname} (schema ${postgres.schema ?? 'agentmsg_relay'})`
    : `data in ${path.resolve(options.dataDir)}`
  const metrics = server.metrics
  logger.info(
    `listening on ${server.url} (${where})${metrics ? `; metrics on ${metrics.url}` : ''}; Ctrl-C stops`,
  )
  if (metrics && !/^(localhost|::1|127\..*)$/.test(metrics.host)) {
    logger.warn(`metrics listener on ${metrics.host}: plain HTTP without auth, keep it private`)
  }
  io.onListening?.(server)
  const signal = await (io.stopSignal ?? untilSignal)(server)
  logger.info(`${signal}: stopping`)
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), shutdownTimeoutMs)
  })
  const closed = server.close().then(
    () => 'stopped' as const,
    (error: unknown) => ({ error }),
  )
  const outcome = await Promise.race([closed, deadline])
  clearTimeout(timer)
  if (outcome === 'stopped') {
    logger.info('stopped')
    return 0
  }
  // Whatever did not stop may hold the event loop: the process is ended.
  const late = `did not stop within ${shutdownTimeoutMs / 1000} s (--shutdown-timeout)`
  if (outcome === 'timeout') logger.error(`${late}: exiting 1`)
  else logger.error({ err: outcome.error }, 'stop failed: exiting 1')
  if (io.exit) io.exit(1)
  else process.exit(1)
  return 1
}

/** A pino JSON line as the human line the other commands print on a terminal (`info`). */
function humanLine(json: string): string {
  try {
    const { level, msg, err } = JSON.parse(json)
    const tag = level >= 50 ? 'error: ' : level >= 40 ? 'warning: ' : ''
    const why = typeof err?.message === 'string' ? `: ${err.message}` : ''
    return `agentmsg: ${oneLine(`${tag}${msg ?? ''}${why}`)}\n`
  } catch {
    return json
  }
}
