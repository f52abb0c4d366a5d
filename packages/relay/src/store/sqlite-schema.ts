/**
 * The SQLite relay store's schema, its migration, and the settings every connection to it
 * uses (the main thread's reader and the writer worker).
 */
import type Database from 'better-sqlite3'

/** The schema version this code writes (`PRAGMA user_version`). */
export const SQLITE_SCHEMA_VERSION = 2

const SCHEMA_V1 = `
CREATE TABLE messages (
  id INTEGER PRIMARY KEY,
  from_agent TEXT NOT NULL,
  message_id TEXT NOT NULL,
  json TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  received_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX messages_expires ON messages (expires_at);

CREATE TABLE entries (
  cursor INTEGER PRIMARY KEY AUTOINCREMENT,
  mailbox TEXT NOT NULL,
  message_ref INTEGER NOT NULL REFERENCES messages (id),
  from_agent TEXT NOT NULL,
  message_id TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  UNIQUE (mailbox, message_id, from_agent)
);
CREATE INDEX entries_mailbox_cursor ON entries (mailbox, cursor);
CREATE INDEX entries_message ON entries (message_ref);

CREATE TABLE mailboxes (
  agent TEXT PRIMARY KEY,
  state TEXT NOT NULL CHECK (state IN ('none', 'open', 'closed')),
  messages INTEGER NOT NULL DEFAULT 0,
  bytes INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE TABLE subscriptions (
  id TEXT PRIMARY KEY,
  agent TEXT NOT NULL,
  topics TEXT NOT NULL,
  webhook_url TEXT,
  webhook_verified INTEGER NOT NULL DEFAULT 0,
  created INTEGER NOT NULL
);
CREATE INDEX subscriptions_agent ON subscriptions (agent);

CREATE TABLE subscription_topics (
  topic TEXT NOT NULL,
  subscription_id TEXT NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
  PRIMARY KEY (topic, subscription_id)
) WITHOUT ROWID;
CREATE INDEX subscription_topics_subscription ON subscription_topics (subscription_id);
`

/**
 * Version 2 (PROFILE §9 as amended): per-sender usage of each mailbox (one sender holds at most
 * a share of it), the relay-wide bytes stored (the storage cap, a topic message once), the
 * triples remembered after their entries were acknowledged or expired, and until when each
 * message's triple is remembered. Counters start from what a version 1 database holds; its
 * messages are remembered for the longest window any of them could need (received_at + 8 days
 * + 15 minutes), as their dates are not stored.
 */
const MIGRATION_V2 = `
ALTER TABLE messages ADD COLUMN forget_at INTEGER NOT NULL DEFAULT 0;
UPDATE messages SET forget_at = received_at + ${8 * 86_400_000 + 15 * 60_000};

CREATE TABLE senders (
  mailbox TEXT NOT NULL,
  from_agent TEXT NOT NULL,
  messages INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  PRIMARY KEY (mailbox, from_agent)
) WITHOUT ROWID;
INSERT INTO senders (mailbox, from_agent, messages, bytes)
  SELECT mailbox, from_agent, COUNT(*), SUM(bytes) FROM entries GROUP BY mailbox, from_agent;

CREATE TABLE totals (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  messages INTEGER NOT NULL,
  bytes INTEGER NOT NULL
);
INSERT INTO totals (id, messages, bytes) SELECT 1, COUNT(*), COALESCE(SUM(bytes), 0) FROM messages;

CREATE TABLE seen (
  mailbox TEXT NOT NULL,
  message_id TEXT NOT NULL,
  from_agent TEXT NOT NULL,
  forget_at INTEGER NOT NULL,
  PRIMARY KEY (mailbox, message_id, from_agent)
) WITHOUT ROWID;
CREATE INDEX seen_forget ON seen (forget_at);
`

/**
 * Durability (PROFILE §9: a 202 means stored): `journal_mode = WAL` with `synchronous = FULL`
 * syncs the WAL on every COMMIT before it returns. Every connection sets the same.
 */
export function configureSqliteConnection(db: Database.Database, busyTimeoutMs: number): void {
  db.pragma(`busy_timeout = ${busyTimeoutMs}`)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma('foreign_keys = ON')
}

/** Create the schema, or migrate it to {@link SQLITE_SCHEMA_VERSION}; refuse a newer one. */
export function migrateSqliteSchema(db: Database.Database): void {
  const version = db.pragma('user_version', { simple: true }) as number
  if (version > SQLITE_SCHEMA_VERSION) {
    throw new Error(
      `relay database schema version ${version} is newer than this relay (${SQLITE_SCHEMA_VERSION})`,
    )
  }
  if (version === SQLITE_SCHEMA_VERSION) return
  db.transaction(() => {
    if (version < 1) db.exec(SCHEMA_V1)
    if (version < 2) db.exec(MIGRATION_V2)
    // Later versions: `if (version < 3) db.exec(MIGRATION_V3)`, …
    db.pragma(`user_version = ${SQLITE_SCHEMA_VERSION}`)
  }).immediate()
}
