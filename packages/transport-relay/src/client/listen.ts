/**
 * The listening half of the relay transport, imported by `listen` on its first call: mailbox
 * streams (SSE, or WebSocket on first use), acknowledgements and the envelope parser. An agent
 * only loads it when it starts listening, and a `sendOnly` one never does (issue 12: what a
 * browser agent loads up front).
 */
export { MailboxListener } from './mailbox-listener.js'
export { relayCore } from './relay-core.js'
