/**
 * @agentmsg/relay — the relay server (PROFILE §9): store-and-forward and pub/sub, on SQLite.
 *
 * @packageDocumentation
 */
export { MailboxFullError } from './store/types.js'
export type {
  MailboxEntry,
  MailboxPage,
  PublishInput,
  PublishResult,
  RelayStore,
  Subscription,
  WebhookTarget,
} from './store/types.js'
