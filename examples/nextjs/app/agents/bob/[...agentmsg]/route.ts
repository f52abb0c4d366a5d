/**
 * Bob's inbox, identity and capabilities documents: /agents/bob/.well-known/agentmsg/…, each
 * request answered by his inbox handler (its basePath is /agents/bob).
 */
import { routeHandlers } from '@agentmsg/transport-https'
import { agentInbox } from '../../../../lib/agent'

export const dynamic = 'force-dynamic'

export const { GET, HEAD, POST, OPTIONS } = routeHandlers(agentInbox, {
  // For the per-address limits (PROFILE §6). A route handler sees no socket: server.mjs sets
  // X-Forwarded-For to the socket's address on every request, over whatever the client sent.
  // Under `next start` alone this would be wrong: Next keeps a client's own X-Forwarded-For.
  clientAddress: (request) => request.headers.get('x-forwarded-for'),
})
