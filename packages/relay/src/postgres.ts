/** @agentmsg/relay/postgres — the relay store on PostgreSQL, shared by relay processes (needs `pg`). */
export {
  openPostgresRelayStore,
  type PostgresRelayStore,
  type PostgresRelayStoreOptions,
} from './store/postgres.js'
