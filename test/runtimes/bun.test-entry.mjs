/**
 * The matrix program on Bun: ./app.mjs behind `Bun.serve` over https. Started by ./run.mjs
 * with NODE_EXTRA_CA_CERTS naming the development CA, so Bun's fetch and WebSocket trust the
 * Node side's certificates; its settings come in AGENTMSG_RUNTIME_TEST as JSON.
 */
import { createTestApp } from './app.mjs'

const { hostname, certFile, keyFile, vectorsDir } = JSON.parse(process.env.AGENTMSG_RUNTIME_TEST)
const app = createTestApp({ loadVector: (name) => Bun.file(`${vectorsDir}/${name}`).text() })

const server = Bun.serve({
  port: 0,
  hostname,
  tls: { cert: Bun.file(certFile), key: Bun.file(keyFile) },
  // No time limit on a connection: the session's response streams for as long as it runs.
  idleTimeout: 0,
  fetch: (request, server) => app.handle(request, server.requestIP(request)?.address).response,
})
console.log(JSON.stringify({ listening: server.port }))
