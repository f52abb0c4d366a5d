/**
 * `agentmsg relay --store postgres://… [--store-schema NAME]`: the PostgreSQL store flags.
 * SQLite in the data directory stays the default; the PostgreSQL store is loaded only when
 * asked for, so a SQLite relay never loads `pg`.
 */
import type { RelayQuota } from './store/common.js'
import type { RelayStore } from './store/types.js'

/** Where a relay started from the command line keeps its mailboxes, when not in SQLite. */
export interface PostgresStoreFlags {
  url: string
  schema?: string
}

const SCHEMA = /^[a-z_][a-z0-9_]{0,62}$/

/** Check `--store` / `--store-schema`; undefined when no `--store` was given. */
export function storeFromFlags(
  url: string | undefined,
  schema: string | undefined,
  usage: (message: string) => Error,
): PostgresStoreFlags | undefined {
  if (url === undefined) {
    if (schema !== undefined) throw usage('--store-schema needs --store postgres://…')
    return undefined
  }
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw usage('--store needs a postgres:// or postgresql:// URL')
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw usage('--store needs a postgres:// or postgresql:// URL')
  }
  if (schema !== undefined && !SCHEMA.test(schema)) {
    throw usage(`--store-schema ${schema}: lower-case letters, digits and _ (at most 63)`)
  }
  return { url, ...(schema !== undefined ? { schema } : {}) }
}

/**
 * The store's URL as it may be logged: host, port and database, never the user or password
 * (no secrets in logs).
 */
export function describeStore(flags: PostgresStoreFlags): string {
  const url = new URL(flags.url)
  const where = `${url.hostname}${url.port ? `:${url.port}` : ''}${url.pathname}`
  return `PostgreSQL ${where} (schema ${flags.schema ?? 'agentmsg_relay'})`
}

/** Open the PostgreSQL store the flags name (migrating its schema). */
export async function openStoreFromFlags(
  flags: PostgresStoreFlags,
  quota: RelayQuota | undefined,
): Promise<RelayStore> {
  const { openPostgresRelayStore } = await import('./store/postgres.js')
  return openPostgresRelayStore({
    connectionString: flags.url,
    ...(flags.schema !== undefined ? { schema: flags.schema } : {}),
    ...(quota !== undefined ? { quota } : {}),
  })
}
