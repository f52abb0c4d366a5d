/** The listening half of the relay transport, imported by its first `listen` (a send-only agent never loads it). */
export { MailboxListener } from './mailbox-listener.js'
