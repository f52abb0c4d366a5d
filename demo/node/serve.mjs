/**
 * What `npm start` runs once the packages are built: the relay on its SQLite store, serving the
 * demo page from its own origin (the page's agents and the relay are same-origin, and the page
 * is a secure context), and the Node agent "Echo" the page can talk to, a member of its room.
 */
import path from 'node:path'
import { loadDevCertificate } from '@agentmsg/dev-tls'
import { serveRelay } from '@agentmsg/relay'
import { bundlePage } from './bundle.mjs'
import { startEchoAgent } from './echo-agent.mjs'
import { DEMO_PATH, demoRoutes } from './routes.mjs'

/** The topic of the demo's room: Echo subscribes to it, as the page's agents do (app.ts). */
export const ROOM = 'demo/room'

/**
 * @param {{ host: string, port: number, home: string, dataDir: string,
 *   log: (line: string) => void }} o
 */
export async function startDemo(o) {
  // Where `agentmsg relay --data DIR --dev-tls` keeps it, so both serve the same certificate;
  // issued by the machine's development CA in $AGENTMSG_HOME/dev-ca.
  const tls = await loadDevCertificate(path.join(o.dataDir, 'dev-tls'))
  // Until every loadDevCertificate returns its CA, the certificate is its own.
  const ca = tls.ca
  const caFile = tls.caFile ?? tls.certFile
  const script = await bundlePage()
  let echo
  let relay
  const intercept = await demoRoutes({
    // Known once listening (PORT=0 picks the port); no request arrives before.
    relayUrl: () => relay.url,
    script,
    config: () => (echo ? { relay: relay.url, echo: echo.id } : undefined),
  })
  relay = await serveRelay({
    host: o.host,
    port: o.port,
    dataDir: o.dataDir,
    tls,
    intercept,
    onError: (e) => o.log(`relay: ${e instanceof Error ? e.message : String(e)}`),
  })
  try {
    echo = await startEchoAgent({ home: o.home, relayUrl: relay.url, ca, room: ROOM, log: o.log })
  } catch (error) {
    await relay.close()
    throw error
  }
  return {
    relayUrl: relay.url,
    pageUrl: `${relay.url}${DEMO_PATH}`,
    /** The CA clients trust (PEM) and its file. */
    ca,
    caFile,
    certFile: tls.certFile,
    echoId: echo.id,
    async close() {
      await echo.close()
      await relay.close()
    },
  }
}
