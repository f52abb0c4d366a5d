/**
 * `agentmsg relay`: run a relay from the command line (flags: usage.ts). The `agentmsg` bin
 * dispatches `relay` here with the arguments after the command name. Errors are one line
 * `agentmsg: <code>: <message — what to do>`, exit 2 for usage and input errors (one line per
 * problem of a config file), 1 when the relay cannot start. Once it listens, it logs JSON lines
 * (pino) on stderr.
 */
import path from 'node:path'
import { parseArgs } from 'node:util'
import { loadDevCertificate } from '@agentmsg/dev-tls'
import {
  type RelayServer,
  type RelayStore,
  type ServeRelayOptions,
  serveRelay,
} from '@agentmsg/relay'
import { loadRelayConfig, mergeLimits, RelayConfigError } from './config.js'
import {
  describeStore,
  EXTRA_FLAGS,
  limitsFromFlags,
  opsFromFlags,
  type PostgresStoreFlags,
  parseSize,
  readPem,
  storeFromFlags,
  trustedProxiesFrom,
} from './flags.js'
import { RELAY_USAGE, RelayCommandError, usage } from './usage.js'

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
  postgres?: PostgresStoreFlags
  shutdownTimeoutMs: number
}

/** Parsed `relay` flags; undefined for --help. */
export async function relayOptionsFromArgs(
  argv: string[],
  log: (text: string) => void,
): Promise<RelayCommandOptions | undefined> {
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        host: { type: 'string' },
        port: { type: 'string' },
        data: { type: 'string' },
        'public-url': { type: 'string' },
        'tls-cert': { type: 'string' },
        'tls-key': { type: 'string' },
        'dev-tls': { type: 'boolean' },
        'allow-private': { type: 'string', multiple: true },
        'trusted-proxies': { type: 'string', multiple: true },
        ca: { type: 'string', multiple: true },
        'max-storage': { type: 'string' },
        store: { type: 'string' },
        'store-schema': { type: 'string' },
        ...EXTRA_FLAGS,
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    })
  } catch (e) {
    throw usage((e as Error).message.split(/\.\s/)[0]!.replace(/\.$/, ''))
  }
  const { values } = parsed
  if (values.help) return undefined
  if (!values.data) throw usage('relay needs --data DIR')
  const host = values.host ?? '127.0.0.1'
  const port = /^[0-9]{1,5}$/.test(values.port ?? '8443') ? Number(values.port ?? '8443') : -1
  if (!(port >= 0 && port <= 65535)) throw usage(`--port ${values.port} is not a port`)
  const dataDir = values.data
  const hasCert = values['tls-cert'] !== undefined || values['tls-key'] !== undefined
  if (
    Boolean(values['dev-tls']) === hasCert ||
    (hasCert && !(values['tls-cert'] && values['tls-key']))
  ) {
    throw usage(
      'relay needs --dev-tls, or --tls-cert F and --tls-key F (https only, also in development)',
    )
  }
  const ops = opsFromFlags(values)
  const maxStorage = values['max-storage']
  const flagLimits = limitsFromFlags(values)
  // After the flags' own checks: a usage error is told before the file's problems.
  const config = ops.configFile === undefined ? {} : await loadRelayConfig(ops.configFile)
  const { limits: fileLimits, quota: fileQuota, ...fileOptions } = config
  const quota =
    maxStorage === undefined ? fileQuota : { ...fileQuota, totalBytes: parseSize(maxStorage) }
  const limits = mergeLimits(fileLimits, flagLimits)
  let tls: { cert: string; key: string }
  if (values['dev-tls']) {
    // In the data directory, made on first use and kept across restarts (key 0600); the
    // machine's development CA issued it: one file to trust for every dev relay and inbox.
    const dev = await loadDevCertificate(path.join(dataDir, 'dev-tls'))
    tls = { cert: dev.cert, key: dev.key }
    log(
      `development CA: ${dev.caFile} (trust it: clients pass --ca ${dev.caFile}; this server's certificate: ${dev.certFile})`,
    )
  } else {
    tls = {
      cert: await readPem('--tls-cert', values['tls-cert']!, '-----BEGIN'),
      key: await readPem('--tls-key', values['tls-key']!, '-----BEGIN'),
    }
  }
  // Extra CAs for what the relay fetches (identity documents, webhooks): PROFILE §6 verifies
  // every certificate, so a dev inbox's CA is added here, never verification turned off. Read
  // after --dev-tls made the machine's dev CA, so a first dev relay may be told to trust it.
  const ca = await Promise.all(
    (values.ca ?? []).map((file) => readPem('--ca', file, '-----BEGIN CERTIFICATE-----')),
  )
  const allowPrivate = (values['allow-private'] ?? [])
    .flatMap((v) => v.split(','))
    .map((s) => s.trim())
    .filter(Boolean)
  const postgres = storeFromFlags(values.store, values['store-schema'])
  const trustedProxies = trustedProxiesFrom(values['trusted-proxies'], fileOptions.trustedProxies)
  return {
    host,
    port,
    dataDir,
    tls,
    ...fileOptions,
    logLevel: ops.logLevel,
    shutdownTimeoutMs: ops.shutdownTimeoutMs,
    // Connections still open halfway through the bound are cut, leaving time for the store.
    closeTimeoutMs: ops.shutdownTimeoutMs / 2,
    ...(ops.metrics ? { metrics: ops.metrics } : {}),
    ...(postgres ? { postgres } : {}),
    ...(values['public-url'] ? { publicUrl: values['public-url'] } : {}),
    ...(allowPrivate.length > 0 ? { allowPrivate } : {}),
    ...(trustedProxies ? { trustedProxies } : {}),
    ...(ca.length > 0 ? { ca } : {}),
    ...(quota ? { quota } : {}),
    ...(limits ? { limits } : {}),
  }
}

function signals(): Promise<string> {
  return new Promise((resolve) => {
    const on = (signal: string) => () => {
      process.off('SIGTERM', term)
      process.off('SIGINT', int)
      resolve(signal)
    }
    const term = on('SIGTERM')
    const int = on('SIGINT')
    process.once('SIGTERM', term)
    process.once('SIGINT', int)
  })
}

/**
 * Run `agentmsg relay` with `argv` (the arguments after `relay`). Resolves with the exit code
 * once the relay stopped: 0 after SIGTERM/SIGINT and a graceful close, 2 for usage errors.
 */
export async function runRelayCommand(argv: string[], io: RelayCommandIo = {}): Promise<number> {
  const out = io.stdout ?? ((t: string) => process.stdout.write(t))
  const err = io.stderr ?? ((t: string) => process.stderr.write(t))
  // One line whatever the error says: `agentmsg: <code>: <message>` (no stack trace).
  const fail = (code: string, message: string, exitCode: number) => {
    err(`agentmsg: ${code}: ${message.replace(/\s*\n\s*/g, ' ')}\n`)
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
      for (const problem of e.problems) fail('invalid_config', `${e.file}: ${problem}`, 2)
      return 2
    }
    if (e instanceof RelayCommandError) return fail(e.code, e.message, e.exitCode)
    return fail('failed', e instanceof Error ? e.message : String(e), 1)
  }
  if (!options) {
    out(RELAY_USAGE)
    return 0
  }
  const { postgres, shutdownTimeoutMs, ...serveOptions } = options
  let server: RelayServer
  let store: RelayStore | undefined
  try {
    if (postgres) {
      // Loaded only when asked for, so a SQLite relay never loads `pg`.
      const { openPostgresRelayStore } = await import('@agentmsg/relay/postgres')
      store = await openPostgresRelayStore({
        connectionString: postgres.url,
        ...(postgres.schema !== undefined && { schema: postgres.schema }),
        ...(serveOptions.quota !== undefined && { quota: serveOptions.quota }),
      })
    }
    // From here on, JSON lines (pino) on the command's stderr.
    const logDestination = { write: (line: string) => void err(line) }
    server = await serveRelay({ ...serveOptions, logDestination, ...(store && { store }) })
  } catch (e) {
    await store?.close().catch(() => undefined)
    const { name, code, message = String(e) } = e as Partial<NodeJS.ErrnoException>
    const inUse = (what: string, flag: string) =>
      fail('port_in_use', `${what} is in use — stop what holds it, or pass another ${flag}`, 1)
    // The metrics listener's error names its port (`metrics port P on H is in use`).
    if (name === 'MetricsListenError' && code === 'EADDRINUSE') {
      return inUse(message.replace(/ is in use$/, ''), '--metrics-port')
    }
    if (code === 'EADDRINUSE') return inUse(`port ${options.port} on ${options.host}`, '--port')
    return fail('failed', message, 1)
  }
  const logger = server.logger!
  for (const line of early) logger.info(line)
  const where = postgres ? describeStore(postgres) : `data in ${path.resolve(options.dataDir)}`
  const metrics = server.metrics ? `; metrics on ${server.metrics.url}` : ''
  logger.info(`listening on ${server.url} (${where})${metrics}; Ctrl-C stops`)
  if (server.metrics && !isLoopback(server.metrics.host)) {
    logger.warn(
      `metrics listener on ${server.metrics.host}: plain HTTP without auth, keep it private`,
    )
  }
  io.onListening?.(server)
  const signal = await (io.stopSignal ?? signals)(server)
  logger.info(`${signal}: stopping`)
  const outcome = await stopWithin(server, shutdownTimeoutMs)
  if (outcome !== 'stopped') {
    if (outcome === 'timeout') {
      logger.error(
        `did not stop within ${shutdownTimeoutMs / 1000} s (--shutdown-timeout): exiting 1`,
      )
    } else {
      logger.error({ err: outcome.error }, 'stop failed: exiting 1')
    }
    // Whatever did not stop may hold the event loop: end the process.
    ;(io.exit ?? ((code: number) => process.exit(code)))(1)
    return 1
  }
  logger.info('stopped')
  return 0
}

/** A loopback host: the metrics listener there is reachable from this machine only. */
function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.')
}

/** Close `server` within `ms`: `stopped`, `timeout`, or the error the close failed with. */
async function stopWithin(
  server: RelayServer,
  ms: number,
): Promise<'stopped' | 'timeout' | { error: unknown }> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms)
  })
  try {
    const closed = server.close().then(
      () => 'stopped' as const,
      (error: unknown) => ({ error }),
    )
    return await Promise.race([closed, late])
  } finally {
    clearTimeout(timer)
  }
}
