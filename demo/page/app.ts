/**
 * The demo page (`npm start`, served at /demo/ from the relay's own origin): two relay-only
 * agents side by side, Alice receiving over SSE and Bob over WebSocket, each with its own
 * IndexedDB database, and the Node agent "Echo" of `npm start` to talk to. The server tells the
 * page the relay's URL (its canonical one: relay auth signs it, PROFILE §9) and Echo's id.
 */
import { openPane, type Pane } from './pane.js'

interface DemoConfig {
  relay: string
  echo: string
}

const status = document.getElementById('status') as HTMLElement
const container = document.getElementById('panes') as HTMLElement

async function main(): Promise<void> {
  const res = await fetch('/demo/config.json', { cache: 'no-store' })
  if (!res.ok) throw new Error(`the server is not ready (HTTP ${res.status}): reload in a moment`)
  const config = (await res.json()) as DemoConfig
  const names = new Map<string, string>([[config.echo, 'Echo (Node agent)']])
  const common = { relay: config.relay, container, names }
  const panes: Pane[] = [
    await openPane({
      ...common,
      key: 'alice',
      name: 'Alice',
      dbName: 'agentmsg-demo-alice',
      mode: 'sse',
    }),
    await openPane({ ...common, key: 'bob', name: 'Bob', dbName: 'agentmsg-demo-bob', mode: 'ws' }),
  ]
  for (const pane of panes) {
    await pane.start([...panes.filter((p) => p !== pane).map((p) => p.id), config.echo])
  }
  addEventListener('pagehide', () => void Promise.all(panes.map((p) => p.close())))
  status.textContent = `Alice and Bob are online through the relay at ${config.relay}. Write in either pane.`
  status.dataset.ready = 'true'
}

main().catch((error: unknown) => {
  status.textContent = `The demo could not start: ${error instanceof Error ? error.message : String(error)}`
  console.error(error)
})
