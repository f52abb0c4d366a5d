/**
 * The operations flags of `agentmsg relay` (issue 14): the config file, the metrics listener,
 * the log level and the shutdown bound; and the bounded stop.
 */
import { isLogLevel, LOG_LEVELS } from './server/relay-log.js'
import type { RelayServer } from './server/serve.js'

/** The `parseArgs` options of these flags. */
export const OPS_FLAGS = {
  config: { type: 'string' },
  'metrics-port': { type: 'string' },
  'metrics-host': { type: 'string' },
  'log-level': { type: 'string' },
  'shutdown-timeout': { type: 'string' },
} as const

export const OPS_USAGE = `  --config FILE     limits and quotas (PROFILE §6, §9) from a JSON file, checked at start;
                    a flag given too wins over the file (see the relay README)
  --metrics-port P  Prometheus metrics at http://<metrics host>:P/metrics (off unless given;
                    never on the relay's own port)
  --metrics-host H  address of the metrics listener (default 127.0.0.1: plain HTTP, no auth)
  --log-level L     ${LOG_LEVELS.join(', ')} (default info): JSON lines on stderr,
                    one per refused request
  --shutdown-timeout S   seconds a SIGTERM or SIGINT may take to drain and stop (default 10);
                    past it the relay exits 1`

type OpsValues = Partial<Record<keyof typeof OPS_FLAGS, string>>

/** What the flags ask for. */
export interface OpsFlags {
  configFile?: string
  metrics?: { port: number; host: string }
  logLevel: string
  shutdownTimeoutMs: number
}

/** Check the operations flags (usage errors through `fail`). */
export function opsFromFlags(values: OpsValues, fail: (message: string) => Error): OpsFlags {
  const ops: OpsFlags = { logLevel: values['log-level'] ?? 'info', shutdownTimeoutMs: 10_000 }
  if (!isLogLevel(ops.logLevel)) {
    throw fail(`--log-level ${ops.logLevel}: one of ${LOG_LEVELS.join(', ')}`)
  }
  if (values.config !== undefined) ops.configFile = values.config
  const port = values['metrics-port']
  const host = values['metrics-host']
  if (port !== undefined) {
    const n = /^[0-9]{1,5}$/.test(port) ? Number(port) : -1
    if (!(n >= 0 && n <= 65535)) throw fail(`--metrics-port ${port} is not a port`)
    ops.metrics = { port: n, host: host ?? '127.0.0.1' }
  } else if (host !== undefined) {
    throw fail('--metrics-host needs --metrics-port P')
  }
  const timeout = values['shutdown-timeout']
  if (timeout !== undefined) {
    const seconds = /^[0-9]{1,4}(\.[0-9]{1,3})?$/.test(timeout) ? Number(timeout) : 0
    if (!(seconds > 0))
      throw fail(`--shutdown-timeout ${timeout} is not a positive number of seconds`)
    ops.shutdownTimeoutMs = seconds * 1000
  }
  return ops
}

/** A loopback host: the metrics listener there is reachable from this machine only. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.')
}

/** Close `server` within `ms`: `stopped`, `timeout`, or the error the close failed with. */
export async function stopWithin(
  server: RelayServer,
  ms: number,
): Promise<'stopped' | 'timeout' | { error: unknown }> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms)
  })
  try {
    return await Promise.race([
      server.close().then(
        () => 'stopped' as const,
        (error: unknown) => ({ error }),
      ),
      late,
    ])
  } finally {
    clearTimeout(timer)
  }
}
