// The PostgreSQL store's schema. Times are `double precision`: epoch ms read back exactly.
// Identifiers use the "C" collation: compared byte for byte like SQLite's, cheaper to index.
import { createHash, randomBytes } from 'node:crypto'
import type pg from 'pg'
import { postgresFunctions } from './postgres-functions.js'

/** The schema version this code writes (the row of `<schema>.schema_version`). */
export const POSTGRES_SCHEMA_VERSION = 2

/** Validate a schema name and return it quoted as an identifier. */
export function quoteSchema(schema: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new RangeError(`invalid PostgreSQL schema name ${JSON.stringify(schema)}`)
  }
  return `"${schema}"`
}

/** The "new entries" channel, per schema; at most 63 bytes (a long name cut and hashed). */
export function postgresChannel(schema: string): string {
  const channel = `${schema}:entries`
  if (channel.length <= 63) return channel
  const hash = createHash('sha256').update(schema).digest('hex').slice(0, 16)
  return `${schema.slice(0, 46)}:${hash}`
}

/** The tables; the write functions follow (postgres-functions.ts). */
const tables = (s: string) => `
-- Relay-wide counters, striped (a writer adds to its stripe once per transaction at its end):
-- writers on several nodes share no row. Totals are the sums (postgres-functions.ts).
CREATE TABLE ${s}.relay_totals (
  stripe integer PRIMARY KEY,
  messages bigint NOT NULL,
  bytes bigint NOT NULL
);

CREATE TABLE ${s}.messages (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  from_agent text COLLATE "C" NOT NULL,
  message_id text COLLATE "C" NOT NULL,
  json text NOT NULL,
  json_bytes integer NOT NULL,
  bytes bigint NOT NULL,
  received_at double precision NOT NULL,
  expires_at double precision NOT NULL,
  forget_at double precision NOT NULL,
  bucket text COLLATE "C"
);
CREATE INDEX messages_expires ON ${s}.messages (expires_at);

-- Bytes stored per client address bucket, by keyed hash (never the address: PROFILE §9), kept
-- in step with the messages (postgres-functions.ts): the sum of its stripes' rows.
CREATE TABLE ${s}.buckets (
  bucket text COLLATE "C",
  stripe integer,
  bytes bigint NOT NULL,
  PRIMARY KEY (bucket, stripe)
);

-- The store's own values: bucket_key, the key of the bucket hashes, shared by every node.
CREATE TABLE ${s}.meta (name text COLLATE "C" PRIMARY KEY, value bytea NOT NULL);

-- cursor: from entry_cursor, taken under the mailbox's row lock (postgres-functions.ts), so a
-- mailbox's entries commit in cursor order.
CREATE SEQUENCE ${s}.entry_cursor;
CREATE TABLE ${s}.entries (
  mailbox text COLLATE "C" NOT NULL,
  cursor bigint NOT NULL,
  -- The message's row (kept while an entry refers to it: postgres-removals.ts).
  message_ref bigint NOT NULL,
  from_agent text COLLATE "C" NOT NULL,
  message_id text COLLATE "C" NOT NULL,
  bytes bigint NOT NULL,
  -- The message's, repeated so that a full mailbox finds its expired entries by index.
  expires_at double precision NOT NULL,
  PRIMARY KEY (mailbox, cursor),
  CONSTRAINT entries_triple UNIQUE (mailbox, message_id, from_agent)
);
CREATE INDEX entries_mailbox_expires ON ${s}.entries (mailbox, expires_at);
CREATE INDEX entries_message ON ${s}.entries (message_ref);

CREATE TABLE ${s}.mailboxes (
  agent text COLLATE "C" PRIMARY KEY,
  state text NOT NULL CHECK (state IN ('none', 'open', 'closed')),
  messages bigint NOT NULL DEFAULT 0,
  bytes bigint NOT NULL DEFAULT 0
);

CREATE TABLE ${s}.senders (
  mailbox text COLLATE "C" NOT NULL,
  from_agent text COLLATE "C" NOT NULL,
  messages bigint NOT NULL,
  bytes bigint NOT NULL,
  PRIMARY KEY (mailbox, from_agent)
);

CREATE TABLE ${s}.seen (
  mailbox text COLLATE "C" NOT NULL,
  message_id text COLLATE "C" NOT NULL,
  from_agent text COLLATE "C" NOT NULL,
  forget_at double precision NOT NULL,
  PRIMARY KEY (mailbox, message_id, from_agent)
);
CREATE INDEX seen_forget ON ${s}.seen (forget_at);

CREATE TABLE ${s}.subscriptions (
  id text COLLATE "C" PRIMARY KEY,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  agent text COLLATE "C" NOT NULL,
  topics text[] NOT NULL,
  webhook_url text,
  webhook_verified boolean NOT NULL DEFAULT false,
  created double precision NOT NULL
);
CREATE INDEX subscriptions_agent ON ${s}.subscriptions (agent);

CREATE TABLE ${s}.subscription_topics (
  topic text COLLATE "C" NOT NULL,
  subscription_id text COLLATE "C" NOT NULL
    REFERENCES ${s}.subscriptions (id) ON DELETE CASCADE,
  PRIMARY KEY (topic, subscription_id)
);
CREATE INDEX subscription_topics_subscription ON ${s}.subscription_topics (subscription_id);

-- RFC 9421 nonces of agent auth, shared by every relay process (PROFILE §9).
CREATE TABLE ${s}.nonces (
  key_id text COLLATE "C" NOT NULL,
  nonce text COLLATE "C" NOT NULL,
  expires_at double precision NOT NULL,
  PRIMARY KEY (key_id, nonce)
);
CREATE INDEX nonces_expires ON ${s}.nonces (expires_at);
`

/**
 * Version 1 → 2: one lock per mailbox instead of one relay-wide row. Cursors continue from the
 * old relay-wide counter. The functions are made anew
 * (those of version 1 dropped with their trigger), so every node must run version 2.
 */
const fromVersion1 = (s: string) => `
DO $$ DECLARE f regprocedure; BEGIN
  FOR f IN SELECT oid::regprocedure FROM pg_proc WHERE pronamespace = '${s}'::regnamespace LOOP
    EXECUTE format('DROP FUNCTION %s CASCADE', f);
  END LOOP;
END $$;
CREATE TABLE ${s}.relay_totals (stripe integer PRIMARY KEY, messages bigint NOT NULL, bytes bigint NOT NULL);
INSERT INTO ${s}.relay_totals SELECT 0, messages, bytes FROM ${s}.relay_state;
CREATE SEQUENCE ${s}.entry_cursor;
SELECT setval('${s}.entry_cursor', next_cursor, false) FROM ${s}.relay_state;
DROP TABLE ${s}.relay_state;
ALTER TABLE ${s}.entries DROP CONSTRAINT entries_pkey, ADD PRIMARY KEY (mailbox, cursor),
  DROP CONSTRAINT entries_message_ref_fkey;
DROP INDEX ${s}.entries_mailbox_cursor;
ALTER TABLE ${s}.buckets ADD COLUMN stripe integer NOT NULL DEFAULT 0;
ALTER TABLE ${s}.buckets ALTER COLUMN stripe DROP DEFAULT, DROP CONSTRAINT buckets_pkey,
  ADD PRIMARY KEY (bucket, stripe);
`

/**
 * Create the schema unless it exists (an advisory lock: concurrent opens take turns); resolves
 * to the key of the store's bucket hashes, made with the schema (see `bucketHasher`).
 */
export async function createPostgresSchema(client: pg.ClientBase, schema: string): Promise<Buffer> {
  const s = quoteSchema(schema)
  await client.query('BEGIN')
  try {
    const lock = `agentmsg-relay-schema:${schema}`
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [lock])
    // Checked before creating: CREATE … IF NOT EXISTS needs the privilege to create even when
    // the object exists (a schema an administrator made for the relay).
    const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])
    if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${s}`)
    const table = await client.query('SELECT to_regclass($1) AS t', [`${s}.schema_version`])
    if (table.rows[0].t === null) {
      await client.query(
        `CREATE TABLE ${s}.schema_version (id integer PRIMARY KEY CHECK (id = 1), ` +
          'version integer NOT NULL, migrated_at timestamptz NOT NULL DEFAULT now())',
      )
    }
    const row = await client.query(`SELECT version FROM ${s}.schema_version WHERE id = 1`)
    const version: number = row.rows[0]?.version ?? 0
    if (version > POSTGRES_SCHEMA_VERSION) {
      throw new Error(
        `relay database schema ${schema} version ${version} is newer than this relay (${POSTGRES_SCHEMA_VERSION})`,
      )
    }
    if (version < POSTGRES_SCHEMA_VERSION) {
      const functions = postgresFunctions(s, postgresChannel(schema))
      if (version === 1) await client.query(fromVersion1(s) + functions)
      else {
        await client.query(tables(s) + functions)
        await client.query(`INSERT INTO ${s}.meta VALUES ('bucket_key', $1)`, [randomBytes(32)])
      }
      await client.query(
        `INSERT INTO ${s}.schema_version (id, version) VALUES (1, $1) ` +
          'ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version, migrated_at = now()',
        [POSTGRES_SCHEMA_VERSION],
      )
    }
    const key = await client.query(`SELECT value FROM ${s}.meta WHERE name = 'bucket_key'`)
    await client.query('COMMIT')
    return key.rows[0].value
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined)
    throw error
  }
}
