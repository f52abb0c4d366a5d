/**
 * Relay nodes for the PostgreSQL benchmark (issue 13): one relay process on its own SQLite
 * store, or N relay processes sharing one PostgreSQL schema, each its own `node` process
 * (server.mjs). Plus what the section reads of the machine while they run, from Linux /proc:
 * the CPU of the relay processes, of the PostgreSQL processes serving them, of the machine.
 */
import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { cpus } from 'node:os'
import pg from 'pg'
import { spawnRole } from './harness.mjs'

export const POSTGRES_URL =
  process.env.AGENTMSG_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

/** One tick of /proc's CPU times: USER_HZ is 100 on Linux. */
const TICK_MS = 10

/** Run `sql` on a short-lived connection (schema housekeeping, never on the measured path). */
export async function postgresQuery(query, url = POSTGRES_URL) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await client.query(query)
  } finally {
    await client.end()
  }
}

/** A schema name no other run uses; the relay nodes create it, {@link dropSchema} removes it. */
export const freshSchema = () => `agentmsg_bench_${randomBytes(6).toString('hex')}`

export const dropSchema = (schema) => postgresQuery(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)

/**
 * Start `nodes` relay processes. `store` 'sqlite' (one node, its own file) or 'postgres' (every
 * node on a fresh schema, dropped by `stop()`). The nodes start one after another: the first
 * creates the schema, the others find it migrated.
 */
export async function startCluster({ store, nodes = 1, tls }) {
  if (store === 'sqlite' && nodes !== 1) throw new Error('a SQLite relay is one node')
  const schema = store === 'postgres' ? freshSchema() : undefined
  const servers = []
  /** Stop the nodes (and drop the schema): → the write transactions they committed. */
  const stop = async () => {
    // SQLite: the store counts its COMMITs (server.mjs). PostgreSQL: every write transaction
    // adds to one `relay_totals` stripe once (postgres-functions.ts), counted in the table's
    // statistics, which the backends report when they end.
    const sqlite = schema ? undefined : await servers[0]?.call('stats').catch(() => undefined)
    await Promise.all(servers.map((s) => s.stop()))
    if (!schema) return { transactions: sqlite?.commits ?? NaN }
    try {
      const { rows } = await postgresQuery({
        text: `SELECT n_tup_upd + n_tup_ins AS n_tup_upd FROM pg_stat_user_tables
          WHERE schemaname = $1 AND relname = 'relay_totals'`,
        values: [schema],
      })
      return { transactions: Number(rows[0]?.n_tup_upd ?? NaN) }
    } finally {
      await dropSchema(schema)
    }
  }
  try {
    for (let i = 0; i < nodes; i++) {
      const config = { kind: 'relay', tls }
      if (schema) config.postgres = { connectionString: POSTGRES_URL, schema }
      servers.push(await spawnRole('server', config, { profile: true }))
    }
  } catch (error) {
    await stop()
    throw error
  }
  return {
    servers,
    urls: servers.map((s) => s.info.url),
    /** CPU µs (all threads) of every relay process so far, summed. */
    cpu: async () => (await Promise.all(servers.map((s) => s.call('cpu')))).reduce((a, b) => a + b),
    stop,
  }
}

/** `/proc/<pid>/stat` fields after the command name (field 3 onward). */
function statFields(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return {
      comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
      fields: stat.slice(stat.lastIndexOf(')') + 2).split(' '),
    }
  } catch {
    return undefined // gone meanwhile, or not ours to read
  }
}

/** CPU ms so far of a process (all its threads); undefined once it is gone. */
function processCpuMs(pid) {
  const s = statFields(pid)
  return s && (Number(s.fields[11]) + Number(s.fields[12])) * TICK_MS
}

/** Local ports of the TCP connections that processes `pids` hold to `port` (Linux /proc). */
function localPortsTo(pids, port) {
  const inodes = new Set()
  for (const pid of pids) {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))
        if (m) inodes.add(m[1])
      } catch {
        // closed meanwhile
      }
    }
  }
  const ports = []
  for (const file of ['tcp', 'tcp6']) {
    const lines = readFileSync(`/proc/${pids[0]}/net/${file}`, 'utf8').split('\n').slice(1)
    for (const line of lines) {
      const f = line.trim().split(/\s+/)
      if (f.length < 10 || !inodes.has(f[9])) continue
      if (Number.parseInt(f[2].split(':')[1], 16) === port) {
        ports.push(Number.parseInt(f[1].split(':')[1], 16))
      }
    }
  }
  return ports
}

/**
 * The PostgreSQL processes working for `relayPids` — the backends at the other end of their
 * connections (found by client port, since other sessions may be using the same server) —
 * and the server's background processes (WAL writer, checkpointer…, shared with whatever else
 * uses the server): pid → CPU ms so far. `undefined` when the server's processes are not
 * visible here (another machine or container).
 */
export async function postgresCpu(relayPids) {
  const port = Number(new URL(POSTGRES_URL).port || 5432)
  const ports = localPortsTo(relayPids, port)
  const { rows } = await postgresQuery({
    text: `SELECT pid FROM pg_stat_activity
      WHERE client_port = ANY($1::int[]) OR backend_type <> 'client backend'`,
    values: [ports],
  })
  const out = new Map()
  for (const { pid } of rows) {
    const ms = processCpuMs(pid)
    if (ms !== undefined) out.set(pid, ms)
  }
  return out.size > 0 ? out : undefined
}

/** CPU ms the processes of a later {@link postgresCpu} used since an earlier one. */
function postgresCpuBetween(a, b) {
  if (a === undefined || b === undefined) return NaN
  let ms = 0
  // A backend that started in between counts whole; one that ended in between is not seen
  // (the relays' pools keep theirs open while loaded).
  for (const [pid, now] of b) ms += now - (a.get(pid) ?? 0)
  return ms
}

/** The machine's CPU ticks so far (/proc/stat): busy and all, summed over every core. */
export function machineTicks() {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]
  const t = line.trim().split(/\s+/).slice(1).map(Number)
  const idle = t[3] + (t[4] ?? 0) // idle + iowait
  const all = t.slice(0, 8).reduce((a, b) => a + b, 0)
  return { busy: all - idle, all }
}

/**
 * A snapshot to diff: the relay processes, the PostgreSQL processes serving them, the load
 * generators (`loadPids`: publisher, subscriber) and the whole machine.
 */
export async function cpuSnapshot(cluster, loadPids = []) {
  return {
    relayUs: await cluster.cpu(),
    postgres: await postgresCpu(cluster.servers.map((server) => server.pid)),
    loadMs: loadPids.reduce((sum, pid) => sum + (processCpuMs(pid) ?? 0), 0),
    machine: machineTicks(),
    at: performance.now(),
  }
}

/**
 * Between two snapshots: per message, relay µs (all nodes), PostgreSQL µs and the benchmark's
 * own µs (relays, PostgreSQL, load generators); in cores (1 = one core busy the whole time),
 * PostgreSQL's, the benchmark's own and everything else's on the machine (other work sharing
 * the host); and the share of the machine's cores that was busy.
 */
export function cpuBetween(a, b, messages) {
  const ms = b.at - a.at
  const all = b.machine.all - a.machine.all
  const machineBusy = all > 0 ? (b.machine.busy - a.machine.busy) / all : NaN
  const postgresMs = postgresCpuBetween(a.postgres, b.postgres)
  const relayMs = (b.relayUs - a.relayUs) / 1000
  const benchCores = (relayMs + (postgresMs || 0) + b.loadMs - a.loadMs) / ms
  return {
    relayUs: (relayMs * 1000) / messages,
    postgresUs: (postgresMs * 1000) / messages,
    postgresCores: postgresMs / ms,
    benchUs: (benchCores * ms * 1000) / messages,
    benchCores,
    otherCores: Math.max(0, machineBusy * cpus().length - benchCores),
    machineBusy,
  }
}
