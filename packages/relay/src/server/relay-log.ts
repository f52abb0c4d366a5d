/**
 * The relay's structured logs, with `pino`: JSON lines on stderr. One line per refused
 * request, with its PROFILE code, status, endpoint name, method and client-address bucket, and
 * nothing a log reader could abuse: never a body, a header, a signature or a path (paths name
 * agents and messages).
 */
import { type DestinationStream, type Level, type Logger, pino } from 'pino'
import { RELAY_LOG_LEVELS, type RefusedRequest, type RelayObserver } from './types.js'

export type { Logger as RelayLogger } from 'pino'

/** A pino logger for a relay; lines on stderr, written synchronously (out before an exit). */
export function createRelayLogger(
  options: { level?: string; destination?: DestinationStream } = {},
): Logger {
  const level = (options.level ?? 'info') as Level
  if (!RELAY_LOG_LEVELS.includes(level)) {
    throw new RangeError(`log level ${level}: one of ${RELAY_LOG_LEVELS.join(', ')}`)
  }
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
      const line = { code, status, route, method, ...(bucket !== undefined && { bucket }) }
      if (status >= 500) logger.warn(line, 'refused')
      else logger.info(line, 'refused')
    },
  }
}
