/**
 * The program every runtime of the matrix serves, as a web-standard request handler: the
 * runtime's own HTTPS server (`Deno.serve`, `Bun.serve`, a workerd socket) calls
 * `app.handle(request, clientAddress)` and answers with its `response`.
 *
 * - `POST /__test/session` (from the Node orchestrator, test/runtimes/run.mjs) runs one session
 *   and streams its events as JSON lines: the local checks (./checks.mjs), `ready` with the ids
 *   of the agents it started (./agents.mjs), what each agent received and replied, then `end`.
 *   Everything a session creates lives inside that one request, as a Worker requires.
 * - Every other request goes to the inbox agent's web-standard handler (its inbox, identity and
 *   capabilities documents), once the session mounted it.
 */
import { startAgents } from './agents.mjs'
import { runLocalChecks } from './checks.mjs'

const encoder = new TextEncoder()

/** `loadVector(name)`: a vector file's text, read the runtime's way. */
export function createTestApp({ loadVector }) {
  let inbox
  /** Settles when the current session is over. */
  let sessionOver

  /** Resolves when the session ended; `emit` writes one event line. */
  async function session(config, emit) {
    try {
      const { checks, platform } = await runLocalChecks(loadVector)
      emit({ type: 'platform', ...platform })
      for (const c of checks) emit({ type: 'check', ...c })
      const agents = await startAgents({
        agentId: config.agentId,
        relayUrl: config.relayUrl,
        modes: config.modes,
        mount: (handler) => (inbox = handler),
        report: emit,
      })
      emit({ type: 'ready', ids: agents.ids })
      let timer
      const late = new Promise((resolve) => {
        timer = setTimeout(() => resolve('timeout'), config.timeoutMs)
      })
      const outcome = await Promise.race([agents.settled.then(() => 'settled'), late])
      clearTimeout(timer)
      if (outcome === 'timeout') emit({ type: 'timeout', afterMs: config.timeoutMs })
      await agents.close()
    } catch (e) {
      emit({ type: 'failure', error: String(e?.stack ?? e) })
    }
    emit({ type: 'end' })
  }

  return {
    /**
     * Answer one request. Returns `{ response, done }`: `done` settles when the work the
     * request started is over (a Worker passes it to `ctx.waitUntil`).
     */
    handle(request, clientAddress) {
      const url = new URL(request.url)
      if (url.pathname === '/__test/session' && request.method === 'POST') {
        const { readable, writable } = new TransformStream()
        const writer = writable.getWriter()
        // A reader that went away fails the writes: nothing is left to tell then.
        const emit = (event) =>
          void writer.write(encoder.encode(`${JSON.stringify(event)}\n`)).catch(() => {})
        const done = request
          .json()
          .then((config) => session(config, emit))
          .then(() => writer.close())
          .catch(() => {})
        sessionOver = done
        const headers = { 'content-type': 'application/x-ndjson' }
        return { response: new Response(readable, { headers }), done }
      }
      if (!inbox) return { response: new Response('no session', { status: 503 }) }
      // The inbox answers 202 and the agent handles the message after it (PROFILE §6): a Worker
      // cancels what a request left to do once its response is sent, unless told to wait, so
      // each inbox request waits for the session to be over (`ctx.waitUntil(done)`).
      return { response: inbox.fetch(request, { clientAddress }), done: sessionOver }
    },
  }
}
