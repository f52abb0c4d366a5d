/**
 * The relay's structured logs (issue 14), with `pino`: JSON lines on stderr. One line per refused
 * request, with its PROFILE code, status, endpoint name, method and client-address bucket, and
 * nothing a log reader could abuse: never a body, a header, a signature or a path (paths name
 * agents and messages).
 */
import { type DestinationStream, type Level, type Logger, pino } from 'pino'
import type { RefusedRequest, RelayObserver } from './types.js'

export type { Logger as RelayLogger } from 'pino'

/** The levels `--log-level` takes (pino's), `silent` turning logs off. */
export const LOG_LEVELS: readonly string[] = [
  'fatal',
  'error',
  'warn',
  'info',
  'debug',
  'trace',
  'silent',
]

export function isLogLevel(value: string): value is Level | 'silent' {
  return LOG_LEVELS.includes(value)
}

export interface RelayLoggerOptions {
  /** @default 'info' */
  level?: string
  /** Where lines go. @default stderr, written synchronously (a line is out before an exit) */
  destination?: DestinationStream
}

/** A pino logger for a relay. */
export function createRelayLogger(options: RelayLoggerOptions = {}): Logger {
  const level = options.level ?? 'info'
  if (!isLogLevel(level))
    throw new RangeError(`log level ${level}: one of ${LOG_LEVELS.join(', ')}`)
  return pino(
    { name: 'agentmsg-relay', level, timestamp: pino.stdTimeFunctions.isoTime },
    options.destination ?? pino.destination({ fd: 2, sync: true }),
  )
}

/**
 * The observer that logs refused requests: `info` for a client's error (4xx), `warn` for the
 * relay's (5xx), under the message `refused`.
 */
export function logObserver(logger: Logger): RelayObserver {
  return {
    refused(request: RefusedRequest) {
      const { code, status, route, method, bucket } = request
      // Fields picked one by one: nothing else of a request can reach the line.
      const line =
        bucket === undefined
          ? { code, status, route, method }
          : { code, status, route, method, bucket }
      if (status >= 500) logger.warn(line, 'refused')
      else logger.info(line, 'refused')
    },
  }
}
