/**
 * Node-only parts of @agentmsg/transport-https: the `node:https` inbox server, an https-only
 * fetch with a custom CA and the outbound address rules, and development certificates.
 *
 * @packageDocumentation
 */
export { createDevCertificate } from './dev-cert.js'
export type { DevCertificate, DevCertificateOptions } from './dev-cert.js'
