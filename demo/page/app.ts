/**
 * The demo page (`npm start`, served at /demo/ from the relay's own origin): three relay-only
 * agents side by side, Alice and Carol receiving over SSE and Bob over WebSocket, each with its
 * own IndexedDB database; the Node agent "Echo" of `npm start` to talk to; and a room, a topic
 * all four subscribe to, with its member list (room.ts). The server tells the page the relay's
 * URL (its canonical one: relay auth signs it, PROFILE §9) and Echo's id.
 */
import { openPane, type Pane } from './pane.js'
import { openRoom } from './room.js'

interface DemoConfig {
  relay: string
  echo: string
}

/** The room's topic: Echo subscribes to the same one (demo/node/serve.mjs). */
const ROOM = 'demo/room'

const status = document.getElementById('status') as HTMLElement
const container = document.getElementById('panes') as HTMLElement
const roomPanel = document.getElementById('room') as HTMLElement

const AGENTS = [
  { key: 'alice', name: 'Alice', dbName: 'agentmsg-demo-alice', mode: 'sse' },
  { key: 'bob', name: 'Bob', dbName: 'agentmsg-demo-bob', mode: 'ws' },
  { key: 'carol', name: 'Carol', dbName: 'agentmsg-demo-carol', mode: 'sse' },
] as const

async function main(): Promise<void> {
  const res = await fetch('/demo/config.json', { cache: 'no-store' })
  if (!res.ok) throw new Error(`the server is not ready (HTTP ${res.status}): reload in a moment`)
  const config = (await res.json()) as DemoConfig
  const echoName = 'Echo (Node agent)'
  const names = new Map<string, string>([[config.echo, echoName]])
  const panes: Pane[] = []
  for (const a of AGENTS) {
    panes.push(await openPane({ ...a, relay: config.relay, container, names, room: ROOM }))
  }
  for (const pane of panes) {
    await pane.start([...panes.filter((p) => p !== pane).map((p) => p.id), config.echo])
  }
  const people = [...panes, { id: config.echo, key: 'echo', name: echoName }]
  await openRoom({ topic: ROOM, panes, people, container: roomPanel })
  addEventListener('pagehide', () => void Promise.all(panes.map((p) => p.close())))
  status.textContent = `Alice, Bob and Carol are online through the relay at ${config.relay}. Write in any pane, to one agent or to the room.`
  status.dataset.ready = 'true'
}

main().catch((error: unknown) => {
  status.textContent = `The demo could not start: ${error instanceof Error ? error.message : String(error)}`
  console.error(error)
})
