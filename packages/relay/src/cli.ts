/**
 * `agentmsg relay`: run a relay from the command line.
 *
 *   agentmsg relay --data DIR [--host H] [--port P] [--public-url URL]
 *                  [--dev-tls | --tls-cert F --tls-key F] [--allow-private LIST]
 *                  [--max-storage SIZE]
 *
 * The `agentmsg` bin dispatches `relay` here with the arguments after the command name.
 */
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { loadDevCertificate } from '@agentmsg/transport-https/node'
import { type RelayServer, type ServeRelayOptions, serveRelay } from './server/serve.js'

export const RELAY_USAGE = `usage:
  agentmsg relay --data DIR [--host H] [--port P] [--public-url URL]
                 [--dev-tls | --tls-cert F --tls-key F] [--allow-private LIST]
                 [--max-storage SIZE]
      run a relay (PROFILE §9) over HTTPS with its SQLite store in DIR/relay.sqlite;
      the public URL defaults to https://<host>:<port>; SIGTERM/SIGINT stop it cleanly;
      --max-storage caps what all mailboxes hold together (bytes, or e.g. 512MiB, 10GiB;
      default 10GiB)
`

const SIZE_UNITS: Record<string, number> = { '': 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 }

/** A size: an integer number of bytes, or one with a KiB, MiB or GiB suffix. */
function parseSize(text: string): number {
  const match = /^([0-9]{1,15})(KiB|MiB|GiB)?$/.exec(text.trim())
  if (!match) throw new Error(`--max-storage ${text} is not a size (bytes, KiB, MiB or GiB)`)
  return Number(match[1]) * SIZE_UNITS[match[2] ?? '']!
}

/** Where the command writes and how it waits; replaceable for tests. */
export interface RelayCommandIo {
  stdout?: (text: string) => void
  stderr?: (text: string) => void
  /** Resolves when the relay should stop. @default the first SIGTERM or SIGINT */
  stopSignal?: (server: RelayServer) => Promise<string>
  /** Called once the relay listens. */
  onListening?: (server: RelayServer) => void
}

/** Parsed `relay` flags, ready for {@link serveRelay}. */
export async function relayOptionsFromArgs(
  argv: string[],
  log: (text: string) => void,
): Promise<ServeRelayOptions | undefined> {
  const { values } = parseArgs({
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
      'max-storage': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  })
  if (values.help) return undefined
  if (!values.data) throw new Error('relay needs --data DIR')
  const host = values.host ?? '127.0.0.1'
  const port = Number(values.port ?? '8443')
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`--port ${values.port} is not a port`)
  }
  const dataDir = values.data
  let tls: { cert: string; key: string }
  if (values['dev-tls']) {
    // In the data directory, made on first use and kept across restarts (key 0600).
    const dev = await loadDevCertificate(path.join(dataDir, 'dev-tls'))
    tls = { cert: dev.cert, key: dev.key }
    log(`development certificate: ${dev.certFile} (clients pass it as their CA)`)
  } else if (values['tls-cert'] && values['tls-key']) {
    tls = {
      cert: await readFile(values['tls-cert'], 'utf8'),
      key: await readFile(values['tls-key'], 'utf8'),
    }
  } else {
    throw new Error(
      'relay needs --dev-tls, or --tls-cert and --tls-key (https only, also in development)',
    )
  }
  const maxStorage = values['max-storage']
  const quota = maxStorage === undefined ? undefined : { totalBytes: parseSize(maxStorage) }
  const allowPrivate = (values['allow-private'] ?? [])
    .flatMap((v) => v.split(','))
    .map((s) => s.trim())
    .filter(Boolean)
  return {
    host,
    port,
    dataDir,
    tls,
    ...(values['public-url'] ? { publicUrl: values['public-url'] } : {}),
    ...(allowPrivate.length > 0 ? { allowPrivate } : {}),
    ...(quota ? { quota } : {}),
    onError: (e: unknown) => log(`error: ${e instanceof Error ? e.message : String(e)}`),
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
  const log = (text: string) => err(`agentmsg relay: ${text}\n`)
  let options: ServeRelayOptions | undefined
  try {
    options = await relayOptionsFromArgs(argv, log)
  } catch (e) {
    log(e instanceof Error ? e.message : String(e))
    err(RELAY_USAGE)
    return 2
  }
  if (!options) {
    out(RELAY_USAGE)
    return 0
  }
  const server = await serveRelay(options)
  log(`listening on ${server.url} (data in ${path.resolve(options.dataDir)})`)
  io.onListening?.(server)
  const signal = await (io.stopSignal ?? signals)(server)
  log(`${signal}: stopping`)
  await server.close()
  log('stopped')
  return 0
}
