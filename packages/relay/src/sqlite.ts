/** @agentmsg/relay/sqlite — the embedded relay store on SQLite (needs `better-sqlite3`). */
export { type SqliteRelayStoreOptions, sqliteRelayStore } from './store/sqlite.js'
