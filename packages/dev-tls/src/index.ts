/**
 * @agentmsg/dev-tls — https in development too (PROFILE §6 TLS): a development CA kept in
 * `$AGENTMSG_HOME/dev-ca`, name-constrained to local names, and the leaf certificates it issues
 * for local relays and inboxes. Node only; never needed in production or in a browser bundle.
 * @packageDocumentation
 */
export { agentmsgHome, loadDevCa } from './dev-ca.js'
export { createDevCertificate, type DevCertificate, loadDevCertificate } from './dev-cert.js'
