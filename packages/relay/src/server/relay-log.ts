/**
 * The relay's JSON logs (pino), a line per refused request: code, status, endpoint, method,
 * client-address bucket; never a body, header, signature or path (paths name agents).
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

/** Logs refused requests as `refused`: `info` for a 4xx, `warn` for a 5xx. */
export function logObserver(logger: Logger): RelayObserver {
  return {
    refused(request: RefusedRequest) {
      const { code, status, route, method, bucket } = request
      // Fields picked one by one: nothing else of a request can reach the line.
      const line = { code, status, route, method, ...(bucket !== undefined && { bucket }) }
      logger[status >= 500 ? 'warn' : 'info'](line, 'refused')
    },
  }
}
