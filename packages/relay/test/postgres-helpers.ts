/**
 * PostgreSQL for the relay's tests: the server comes from `AGENTMSG_TEST_POSTGRES_URL`
 * (e.g. `postgres://postgres@127.0.0.1:5432/test`). Unset, the PostgreSQL tests are registered
 * as skipped; set, a server that cannot be reached fails them. Each store under test gets a
 * schema of its own, dropped afterwards.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterEach } from 'vitest'
import {
  openPostgresRelayStore,
  type PostgresRelayStore,
  type PostgresRelayStoreOptions,
} from '../src/store/postgres.js'

export const POSTGRES_TEST_URL: string | undefined =
  process.env.AGENTMSG_TEST_POSTGRES_URL || undefined

/** A schema name no other test uses. */
export function freshPostgresSchema(): string {
  return `agentmsg_t_${randomBytes(6).toString('hex')}`
}

/** Drop a test schema and everything in it. */
export async function dropPostgresSchema(url: string, schema: string): Promise<void> {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new RangeError(`bad schema ${schema}`)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  } finally {
    await client.end()
  }
}

let admin: pg.Pool | undefined

/**
 * Rows of a query on the test server through a pool of the tests' own (to look at what a store
 * wrote from outside it, or to disturb it).
 */
export async function adminQuery(
  text: string,
  values: unknown[] = [],
): Promise<Record<string, unknown>[]> {
  if (POSTGRES_TEST_URL === undefined) throw new Error('AGENTMSG_TEST_POSTGRES_URL is not set')
  admin ??= new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 2 })
  return (await admin.query(text, values)).rows
}

/** End the pool of {@link adminQuery} (afterAll). */
export async function closeAdmin(): Promise<void> {
  const pool = admin
  admin = undefined
  await pool?.end()
}

/** Resolves once `condition()` holds, checking every 10 ms (the test's timeout bounds it). */
export async function waitFor(condition: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 10))
}

/**
 * Stores opened by a test, closed after it, their schemas dropped: `node(schema)` opens a store
 * with its own pool, as one relay process would; `nodes(n)` opens n of them on a fresh schema.
 * Call inside a describe block (it registers an afterEach).
 */
export function postgresTestNodes() {
  const schemas: string[] = []
  const stores: PostgresRelayStore[] = []
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close()
    for (const schema of schemas.splice(0)) await dropPostgresSchema(POSTGRES_TEST_URL!, schema)
  })

  function schemaForTest(): string {
    const schema = freshPostgresSchema()
    schemas.push(schema)
    return schema
  }

  async function node(
    schema: string,
    options: Partial<PostgresRelayStoreOptions> = {},
  ): Promise<PostgresRelayStore> {
    const store = await openPostgresRelayStore({
      connectionString: POSTGRES_TEST_URL!,
      schema,
      ...options,
    })
    stores.push(store)
    return store
  }

  async function nodes(n: number, options: Partial<PostgresRelayStoreOptions> = {}) {
    const schema = schemaForTest()
    // The first creates the schema; the others open it at once.
    const first = await node(schema, options)
    const rest = await Promise.all(Array.from({ length: n - 1 }, () => node(schema, options)))
    return { schema, all: [first, ...rest] }
  }

  return { schemaForTest, node, nodes }
}
