/**
 * examples/fastify as it is: a Fastify 5 app serving Bob's inbox at /agents/bob over HTTPS
 * (development CA). A real agent delivers to it; a tampered message is refused through Fastify.
 * The inbox takes the request in an `onRequest` hook, before Fastify's JSON parser would.
 */
import { startServer } from '../../examples/fastify/src/server.js'
import { describeMountedInbox } from './mounted-inbox.js'

describeMountedInbox('fastify', startServer)
