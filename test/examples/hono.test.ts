/**
 * examples/hono as it is: a Hono app on @hono/node-server serving Bob's inbox at /agents/bob over HTTPS
 * (development CA). A real agent delivers to it; a tampered message is refused through Hono.
 * The route hands Hono's `Request` to the inbox with the socket's address (`getConnInfo`).
 */
import { startServer } from '../../examples/hono/src/server.js'
import { describeMountedInbox } from './mounted-inbox.js'

describeMountedInbox('hono', startServer)
