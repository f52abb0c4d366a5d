/**
 * The agentmsg packages run as they are, loaded from node_modules by the server at run time
 * rather than bundled: they are Node code (node:crypto, node:https, ws) with platform imports.
 *
 * @type {import('next').NextConfig}
 */
export default {
  serverExternalPackages: ['@agentmsg/client', '@agentmsg/dev-tls', '@agentmsg/transport-https'],
}
