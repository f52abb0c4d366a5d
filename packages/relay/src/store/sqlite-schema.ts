/** The SQLite relay store's schema, and the settings of every connection to it. */
import { randomBytes } from 'node:crypto'
import type Database from 'better-sqlite3'

/** The schema version this code writes (`PRAGMA user_version`). */
export const SQLITE_SCHEMA_VERSION = 1

// Counters kept in step with the entries, for the quotas (PROFILE §9): per mailbox, per sender
// of a mailbox, relay-wide (`totals`, a topic message once), per client address bucket
// (`buckets`, by keyed hash: never the address; kept by triggers while the message is stored).
// `seen`: the triples remembered after their entries were acknowledged or expired, until their
// message's `forget_at`. `meta`: the store's own values (`bucket_key`, the hash's key).
const SCHEMA = `
CREATE TABLE messages (
  id INTEGER PRIMARY KEY,
  from_agent TEXT NOT NULL,
  message_id TEXT NOT NULL,
  json TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  received_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  forget_at INTEGER NOT NULL,
  bucket TEXT
);
CREATE INDEX messages_expires ON messages (expires_at);

CREATE TABLE buckets (bucket TEXT PRIMARY KEY, bytes INTEGER NOT NULL) WITHOUT ROWID;
CREATE TRIGGER messages_charge AFTER INSERT ON messages WHEN new.bucket IS NOT NULL BEGIN
  INSERT INTO buckets (bucket, bytes) VALUES (new.bucket, new.bytes)
  ON CONFLICT (bucket) DO UPDATE SET bytes = bytes + excluded.bytes;
END;
CREATE TRIGGER messages_release AFTER DELETE ON messages WHEN old.bucket IS NOT NULL BEGIN
  UPDATE buckets SET bytes = bytes - old.bytes WHERE bucket = old.bucket;
  DELETE FROM buckets WHERE bucket = old.bucket AND bytes <= 0;
END;

CREATE TABLE meta (name TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;

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

CREATE TABLE senders (
  mailbox TEXT NOT NULL,
  from_agent TEXT NOT NULL,
  messages INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  PRIMARY KEY (mailbox, from_agent)
) WITHOUT ROWID;

CREATE TABLE totals (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  messages INTEGER NOT NULL,
  bytes INTEGER NOT NULL
);
INSERT INTO totals (id, messages, bytes) VALUES (1, 0, 0);

CREATE TABLE seen (
  mailbox TEXT NOT NULL,
  message_id TEXT NOT NULL,
  from_agent TEXT NOT NULL,
  forget_at INTEGER NOT NULL,
  PRIMARY KEY (mailbox, message_id, from_agent)
) WITHOUT ROWID;
CREATE INDEX seen_forget ON seen (forget_at);

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

/** Durability (PROFILE §9: a 202 means stored): WAL, `synchronous = FULL` syncs every COMMIT. */
export function configureSqliteConnection(db: Database.Database, busyTimeoutMs: number): void {
  db.pragma(`busy_timeout = ${busyTimeoutMs}`)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma('foreign_keys = ON')
}

/** Create the schema unless it exists; refuse a newer version. */
export function createSqliteSchema(db: Database.Database): void {
  const version = db.pragma('user_version', { simple: true }) as number
  if (version > SQLITE_SCHEMA_VERSION) {
    throw new Error(
      `relay database schema version ${version} is newer than this relay (${SQLITE_SCHEMA_VERSION})`,
    )
  }
  if (version === SQLITE_SCHEMA_VERSION) return
  db.transaction(() => {
    db.exec(SCHEMA)
    db.prepare("INSERT INTO meta (name, value) VALUES ('bucket_key', ?)").run(randomBytes(32))
    db.pragma(`user_version = ${SQLITE_SCHEMA_VERSION}`)
  }).immediate()
}

/** The key of the store's bucket hashes, made with its schema (see `bucketHasher`). */
export const sqliteBucketKey = (db: Database.Database): Buffer =>
  db.prepare("SELECT value FROM meta WHERE name = 'bucket_key'").pluck().get() as Buffer
