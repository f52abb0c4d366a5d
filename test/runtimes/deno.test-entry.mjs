/**
 * The matrix program on Deno: ./app.mjs behind `Deno.serve` over https. Started by ./run.mjs
 * (`deno run --cert <dev CA> …`, so Deno's fetch and WebSocket trust the Node side's
 * development certificates); its settings come in AGENTMSG_RUNTIME_TEST as JSON.
 */
import { createTestApp } from './app.mjs'

const { hostname, certFile, keyFile, vectorsDir } = JSON.parse(
  Deno.env.get('AGENTMSG_RUNTIME_TEST'),
)
const app = createTestApp({ loadVector: (name) => Deno.readTextFile(`${vectorsDir}/${name}`) })

Deno.serve(
  {
    port: 0,
    hostname,
    cert: Deno.readTextFileSync(certFile),
    key: Deno.readTextFileSync(keyFile),
    onListen: ({ port }) => console.log(JSON.stringify({ listening: port })),
  },
  (request, info) => app.handle(request, info.remoteAddr.hostname).response,
)
