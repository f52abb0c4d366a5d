/**
 * The app over HTTPS with Node's own server, as Next's custom-server guide does it: `next build`
 * first, then `node server.mjs`. A certificate from TLS_CERT/TLS_KEY (PEM files), else one from
 * this machine's development CA (@agentmsg/dev-tls: https also in development), which clients
 * trust by its file, `$AGENTMSG_HOME/dev-ca/ca.pem`.
 */
import { readFileSync } from 'node:fs'
import { createServer } from 'node:https'
import { createDevCertificate, loadDevCa } from '@agentmsg/dev-tls'
import next from 'next'

const port = Number(process.env.PORT ?? 8453)
const host = process.env.HOST ?? '127.0.0.1'
const { TLS_CERT, TLS_KEY } = process.env
const tls =
  TLS_CERT && TLS_KEY
    ? { cert: readFileSync(TLS_CERT), key: readFileSync(TLS_KEY) }
    : await createDevCertificate({ ca: await loadDevCa() })

const app = next({ dev: false, dir: import.meta.dirname, hostname: host, port })
await app.prepare()
const handle = app.getRequestHandler()

const options = {
  ...tls,
  minVersion: 'TLSv1.2',
  // Slow clients (PROFILE §6): headers within 10 s, the whole request within 40 s.
  headersTimeout: 10_000,
  requestTimeout: 40_000,
}
createServer(options, (req, res) => {
  // The one client address a route handler can learn is a header: this one is always the
  // socket's, whatever the client sent (Next fills X-Forwarded-For only when it is absent).
  req.headers['x-forwarded-for'] = req.socket.remoteAddress
  handle(req, res)
}).listen(port, host, () => {
  const origin = process.env.PUBLIC_ORIGIN ?? `https://${host}:${port}`
  console.log(`${origin}/agents/bob is listening`)
})
