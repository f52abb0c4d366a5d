/**
 * A benchmark server in its own process (see harness.mjs). `config.kind`:
 * - `relay`: `serveRelay` with its SQLite store in a scratch directory, the per-address and
 *   per-sender limits lifted (the load generator is one address and a few senders); with
 *   `config.postgres` `{connectionString, schema}`, on that PostgreSQL store instead.
 * - `relay-bare`: the relay publish baseline — node:https, `JSON.parse`, one raw node:crypto
 *   verify, then an INSERT into SQLite (WAL, synchronous=FULL) group-committed per event-loop
 *   turn (setImmediate: BEGIN, the inserts queued since the last commit, COMMIT), then 202.
 * - `push-bare`: node:https POST → `ws` push to every connected socket, 202 (relay-common.mjs).
 * - `inbox`: `serveHttps(createInboxHandler(…))`, limits lifted.
 * - `inbox-bare`: node:https, `JSON.parse` + one raw node:crypto verify, 202.
 * The baselines look each message's signing input up by `message_id` in `config.workload`.
 */
import { createPublicKey, verify as nodeVerify } from 'node:crypto'
import { createServer } from 'node:https'
import { join } from 'node:path'
import { didKeyResolver } from '@agentmsg/core/receive'
import { createInboxHandler } from '@agentmsg/transport-https'
import { serveHttps } from '@agentmsg/transport-https/node'
import Database from 'better-sqlite3'
import { startBare } from '../relay-common.mjs'
import { scratch, serveCommands } from './harness.mjs'
import { readItems } from './workload.mjs'

const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex')
const LIFTED = { perAddress: { perMinute: Infinity }, perSender: { perMinute: Infinity } }

/** message_id → what one raw verify needs. */
function verifyTable(file) {
  const keys = new Map()
  const table = new Map()
  for (const item of readItems(file)) {
    let key = keys.get(item.pub)
    if (!key) {
      const der = Buffer.concat([SPKI_PREFIX, Buffer.from(item.pub, 'base64')])
      key = createPublicKey({ key: der, format: 'der', type: 'spki' })
      keys.set(item.pub, key)
    }
    table.set(item.id, { input: Buffer.from(item.input, 'base64'), key })
  }
  return table
}

/** Parse + one raw verify; the parsed message, or undefined when it does not verify. */
function parseAndVerify(table, body) {
  const message = JSON.parse(body)
  const known = table.get(message.message_id)
  const sig = Buffer.from(message.security.signatures[0].sig, 'base64url')
  return known && nodeVerify(null, known.input, known.key, sig) ? message : undefined
}

function listen(server) {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
}

/** The bare https server: `answer(body, res)` writes the response. */
async function bareHttps(tls, answer) {
  const server = createServer(
    { cert: tls.cert, key: tls.key, minVersion: 'TLSv1.2' },
    (req, res) => {
      const chunks = []
      req.on('data', (c) => chunks.push(c))
      req.on('end', () => answer(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks), res))
    },
  )
  await listen(server)
  return {
    url: `https://127.0.0.1:${server.address().port}`,
    close: () => {
      server.closeAllConnections()
      return new Promise((r) => server.close(r))
    },
  }
}

const reply = (res, status, body) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(body)

/** SQLite with the relay store's durability pragmas; commits what was queued per loop turn. */
function groupCommitter(path) {
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.exec(`CREATE TABLE messages (seq INTEGER PRIMARY KEY, from_agent TEXT NOT NULL,
    message_id TEXT NOT NULL, json TEXT NOT NULL, received_at INTEGER NOT NULL,
    UNIQUE (from_agent, message_id))`)
  const insert = db.prepare(
    'INSERT OR IGNORE INTO messages (from_agent, message_id, json, received_at) VALUES (?, ?, ?, ?)',
  )
  const commit = db.transaction((rows) => {
    for (const r of rows) insert.run(r.from, r.id, r.json, r.at)
  })
  let queue = []
  let scheduled = false
  const flush = () => {
    scheduled = false
    const rows = queue
    queue = []
    commit(rows)
    for (const r of rows) r.done()
  }
  return {
    add(row) {
      queue.push(row)
      if (!scheduled) {
        scheduled = true
        setImmediate(flush)
      }
    },
    close: () => db.close(),
  }
}

/**
 * The relay package (its root and its SQLite entry): the built one, or `BENCH_RELAY_MODULE` (a
 * path to a module exporting `serveRelay` and `sqliteRelayStore`, to measure a before/after in
 * one run).
 */
const relayModule = async () =>
  process.env.BENCH_RELAY_MODULE
    ? import(process.env.BENCH_RELAY_MODULE)
    : { ...(await import('@agentmsg/relay')), ...(await import('@agentmsg/relay/sqlite')) }

/** `config.postgres` `{connectionString, schema}`: the shared PostgreSQL store (issue 13). */
async function postgresStore(options) {
  const { openPostgresRelayStore } = await import('@agentmsg/relay/postgres')
  return openPostgresRelayStore(options)
}

async function start(config) {
  const { tls } = config
  const counts = { processed: 0 }
  switch (config.kind) {
    case 'relay': {
      const { serveRelay, sqliteRelayStore } = await relayModule()
      const dir = scratch('relay-bench-')
      // The relay's own store, counted: how many writes each group commit carried.
      counts.commits = 0
      counts.writes = 0
      const store = config.postgres
        ? await postgresStore(config.postgres)
        : sqliteRelayStore({
            path: join(dir.dir, 'relay.sqlite'),
            onCommit: (info) => {
              counts.commits++
              counts.writes += info.size
            },
          })
      const relay = await serveRelay({
        dataDir: dir.dir,
        store,
        tls,
        allowPrivate: ['127.0.0.1'],
        limits: LIFTED,
        closeTimeoutMs: 2_000,
        ...config.options,
      })
      return {
        url: relay.url,
        counts,
        close: async () => {
          await relay.close()
          dir.cleanup()
        },
      }
    }
    case 'relay-bare': {
      const dir = scratch('relay-bare-')
      const table = verifyTable(config.workload)
      const store = groupCommitter(join(dir.dir, 'bare.sqlite'))
      const server = await bareHttps(tls, (body, res) => {
        const message = parseAndVerify(table, body)
        if (!message) return reply(res, 401, '{"status":"error"}')
        const id = message.message_id
        store.add({
          from: message.from.agent,
          id,
          json: body.toString('utf8'),
          at: Date.now(),
          done: () => reply(res, 202, `{"status":"accepted","message_id":"${id}"}`),
        })
      })
      return {
        url: server.url,
        counts,
        close: async () => {
          await server.close()
          store.close()
          dir.cleanup()
        },
      }
    }
    case 'push-bare': {
      const bare = await startBare({ ...tls }, { wrap: config.wrap ?? false })
      return { url: bare.url, counts, close: bare.close }
    }
    case 'inbox': {
      const inbox = createInboxHandler({
        agentId: config.agentId,
        resolver: didKeyResolver(),
        onMessage: async () => {
          counts.processed++
        },
        limits: { ...LIFTED, maxQueue: 100_000 },
        ...config.options,
      })
      const server = await serveHttps(inbox, { tls })
      return { url: server.url, counts, close: () => server.close() }
    }
    case 'inbox-bare': {
      const table = verifyTable(config.workload)
      const server = await bareHttps(tls, (body, res) => {
        const ok = parseAndVerify(table, body) !== undefined
        if (ok) counts.processed++
        reply(res, ok ? 202 : 401, '{"status":"accepted"}')
      })
      return { url: server.url, counts, close: server.close }
    }
    default:
      throw new Error(`unknown server kind ${config.kind}`)
  }
}

let running
serveCommands({
  async init({ config }) {
    running = await start(config)
    return { url: running.url, pid: process.pid }
  },
  stats: () => ({ ...running.counts }),
  close: () => running?.close(),
})
