/**
 * The settings of `agentmsg relay` as one table: each row is a flag, a key of the `--config`
 * JSON file (limits and quotas, PROFILE §6 and §9), or both, with the serveRelay option it sets
 * and how its value is checked. A flag given wins over the file.
 */
import { PROFILE } from '@agentmsg/core'
import { AddressSet } from '@agentmsg/core/server'
import { RELAY_LOG_LEVELS } from '@agentmsg/relay'

/** How a value is checked: `ok` returns the value to use, undefined (or throws) when bad. */
export interface Kind {
  /** A bad flag value "is not a <noun>". */
  noun: string
  must: string
  ok(value: unknown): unknown
}

/** A row of the table; `to` (where the value goes, dotted) defaults to `key`. */
export interface Setting {
  flag?: string
  /** A flag without a value. */
  boolean?: true
  multiple?: true
  key?: string
  to?: string
  kind?: Kind
}

const kind = (noun: string, must: string, ok: (v: unknown) => unknown): Kind => ({ noun, must, ok })
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : Number.NaN)
const SIZE_UNITS: Record<string, number> = { '': 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 }

/** Bytes: a whole number, or one with a KiB, MiB or GiB suffix; undefined when not a size. */
function parseSize(text: string): number | undefined {
  const match = /^([0-9]{1,15})(KiB|MiB|GiB)?$/.exec(text.trim())
  return match ? Number(match[1]) * SIZE_UNITS[match[2] ?? '']! : undefined
}

const whole = kind('positive whole number', 'a positive whole number', (v) =>
  Number.isInteger(v) && num(v) >= 1 && num(v) <= 1_000_000_000 ? v : undefined,
)
const rate = kind('rate', 'a positive number or "unlimited"', (v) =>
  v === 'unlimited' ? Number.POSITIVE_INFINITY : num(v) > 0 ? v : undefined,
)
const size = kind(
  'size',
  'a positive number of bytes, or a size such as "256MiB" (KiB, MiB, GiB)',
  (v) => {
    const bytes = typeof v === 'string' ? parseSize(v) : Number.isSafeInteger(v) ? num(v) : 0
    return (bytes ?? 0) >= 1 ? bytes : undefined
  },
)
const seconds = kind('duration', 'a positive number of seconds (at most 86400)', (v) =>
  num(v) > 0 && num(v) <= 86_400 ? num(v) * 1000 : undefined,
)
const DAY = 86_400_000
// PROFILE §9: a message is kept 7 days at least.
const MIN_DAYS = PROFILE.relayRetentionMs / DAY
const days = kind('duration', `a number of days from ${MIN_DAYS} (PROFILE §9) to 3650`, (v) =>
  num(v) >= MIN_DAYS && num(v) <= 3650 ? num(v) * DAY : undefined,
)
const port = kind('port', 'a whole number from 0 to 65535', (v) =>
  Number.isInteger(v) && num(v) >= 0 && num(v) <= 65535 ? v : undefined,
)
const level = kind('log level', `one of ${RELAY_LOG_LEVELS.join(', ')}`, (v) =>
  RELAY_LOG_LEVELS.includes(v as string) ? v : undefined,
)
const stopSeconds = kind('duration', 'a positive number of seconds', (v) =>
  /^[0-9]{1,4}(\.[0-9]{1,3})?$/.test(String(v)) && Number(v) > 0 ? Number(v) * 1000 : undefined,
)
const postgresUrl = kind('postgres:// URL', 'a postgres:// or postgresql:// URL', (v) => {
  const protocol = URL.canParse(String(v)) ? new URL(String(v)).protocol : ''
  return protocol === 'postgres:' || protocol === 'postgresql:' ? v : undefined
})
const schema = kind('schema name', 'lower-case letters, digits and _ (at most 63)', (v) =>
  /^[a-z_][a-z0-9_]{0,62}$/.test(String(v)) ? v : undefined,
)
// Load balancers and proxies whose X-Forwarded-For is believed (PROFILE §6).
const proxies = kind('list of proxies', 'an array of IP addresses or CIDR ranges', (v) =>
  Array.isArray(v) && v.length <= 1000 && v.every((e) => typeof e === 'string') && new AddressSet(v)
    ? v
    : undefined,
)

/** `value` checked by `kind`: what to use, or what is wrong with it. */
export function check(kind: Kind, value: unknown): { value: unknown } | { problem: string } {
  try {
    const ok = kind.ok(value)
    return ok === undefined ? { problem: `must be ${kind.must}` } : { value: ok }
  } catch (e) {
    return { problem: (e as Error).message }
  }
}

/** Every flag and config key; the file's keys in the order its errors name them. */
export const SETTINGS: Setting[] = [
  { flag: 'data', to: 'dataDir' },
  { flag: 'host', to: 'host' },
  { flag: 'port', to: 'port', kind: port },
  { flag: 'public-url', to: 'publicUrl' },
  { flag: 'dev-tls', boolean: true },
  { flag: 'tls-cert' },
  { flag: 'tls-key' },
  { flag: 'ca', multiple: true },
  { flag: 'allow-private', multiple: true },
  { flag: 'store', to: 'postgres.url', kind: postgresUrl },
  { flag: 'store-schema', to: 'postgres.schema', kind: schema },
  {
    flag: 'rate-limit',
    key: 'limits.perAddress.rate',
    to: 'limits.perAddress.perMinute',
    kind: rate,
  },
  { flag: 'burst', key: 'limits.perAddress.burst', kind: whole },
  {
    flag: 'sender-rate-limit',
    key: 'limits.perSender.rate',
    to: 'limits.perSender.perMinute',
    kind: rate,
  },
  { flag: 'sender-burst', key: 'limits.perSender.burst', kind: whole },
  { flag: 'max-reads-per-address', key: 'limits.maxReadsPerAddress', kind: whole },
  { key: 'limits.maxConcurrentReads', kind: whole },
  { key: 'limits.maxTrackedKeys', kind: whole },
  { flag: 'streams-per-agent', key: 'limits.streamsPerAgent', kind: whole },
  { flag: 'streams-per-address', key: 'limits.streamsPerAddress', kind: whole },
  { key: 'limits.maxUnsentBytes', kind: size },
  { key: 'limits.subscriptionsPerAgent', kind: whole },
  { key: 'quota.messages', kind: whole },
  { key: 'quota.bytes', kind: size },
  { key: 'quota.senderMessages', kind: whole },
  { key: 'quota.senderBytes', kind: size },
  { flag: 'max-storage', key: 'quota.totalBytes', kind: size },
  { flag: 'max-storage-per-address', key: 'quota.bucketBytes', kind: size },
  { key: 'timeouts.headersSeconds', to: 'headersTimeoutMs', kind: seconds },
  { key: 'timeouts.bodySeconds', to: 'bodyTimeoutMs', kind: seconds },
  { key: 'timeouts.streamStallSeconds', to: 'stallTimeoutMs', kind: seconds },
  { key: 'retentionDays', to: 'retentionMs', kind: days },
  { key: 'mailboxFullRetryAfter', kind: whole },
  { flag: 'trusted-proxies', multiple: true, key: 'trustedProxies', kind: proxies },
  { flag: 'config' },
  { flag: 'metrics-port', to: 'metrics.port', kind: port },
  { flag: 'metrics-host', to: 'metrics.host' },
  { flag: 'log-level', to: 'logLevel', kind: level },
  { flag: 'shutdown-timeout', to: 'shutdownTimeoutMs', kind: stopSeconds },
]

export const RELAY_USAGE = `usage: agentmsg relay --data DIR (--dev-tls | --tls-cert F --tls-key F) [options]

Run a relay (PROFILE §9) over HTTPS, its mailboxes in DIR/relay.sqlite or PostgreSQL (--store).
SIGINT or SIGTERM stop it cleanly (publishes in flight stored, streams told to reconnect): exit 0.
  --data DIR              the relay data: DIR/relay.sqlite
  --host H                address to listen on (default 127.0.0.1)
  --port P                default 8443
  --public-url URL        default https://<host>:<port>
  --dev-tls               a certificate for localhost, 127.0.0.1 and ::1 from this machine's dev
                          CA: clients trust $AGENTMSG_HOME/dev-ca/ca.pem (made on first use)
  --tls-cert F            a real certificate (PEM), with --tls-key F its key
  --ca F                  trust this CA too for identity documents and webhooks (e.g. the dev CA)
  --allow-private LIST    private or loopback hosts or ranges it may fetch from (e.g. 127.0.0.1)
  --store URL             keep mailboxes in PostgreSQL (postgres://…), not DIR/relay.sqlite: relay
                          processes given the same URL and schema serve the same mailboxes
  --store-schema N        default agentmsg_relay
  --rate-limit N          requests per minute from one client address (IPv6: per /64), or
                          "unlimited" for a load test from one machine (default 600)
  --burst N               default 100
  --sender-rate-limit N   publishes per minute per verified sender, or "unlimited" (default 60)
  --sender-burst N        default 20
  --max-reads-per-address N
                          request bodies read at once per address (default 8)
  --streams-per-agent N   open SSE and WebSocket streams per agent (default 4)
  --streams-per-address N open streams per client address, whatever their agents (default 64)
  --max-storage SIZE      what all mailboxes hold together (bytes, or 512MiB, 10GiB; default 10GiB)
  --max-storage-per-address SIZE
                          what is held of one client address's publishes (IPv6: per /48;
                          default 5% of --max-storage)
  --trusted-proxies LIST  proxies (addresses, CIDR ranges) whose X-Forwarded-For the limits believe
  --config FILE           limits and quotas from a JSON file (see the relay README); flags win
  --metrics-port P        Prometheus metrics at http://<metrics host>:P/metrics (off by default)
  --metrics-host H        the metrics listener (default 127.0.0.1: plain HTTP, no auth)
  --log-level L           ${RELAY_LOG_LEVELS.join(', ')} (default info):
                          JSON lines on stderr, one per refused request
  --shutdown-timeout S    seconds a SIGTERM or SIGINT may take to stop, else exit 1 (default 10)

examples:
  agentmsg relay --data ./relay --port 9443 --dev-tls \\
      --ca "$AGENTMSG_HOME/dev-ca/ca.pem" --allow-private 127.0.0.1
  agentmsg relay --data ./load --dev-tls --rate-limit unlimited --sender-rate-limit unlimited
      (a load test from this machine: one address, a few senders)
`
