/** Event collection for the client tests (no servers: usable by in-process tests). */
import type { Agent, AgentEvents } from '../src/index.js'

/** Collects an agent's events, with waiting for the next ones. */
export function collect<K extends keyof AgentEvents>(agent: Agent, event: K) {
  const seen: Array<AgentEvents[K]> = []
  const waiters: Array<{ n: number; resolve: () => void }> = []
  agent.on(event, (e) => {
    seen.push(e)
    for (const w of [...waiters]) {
      if (seen.length >= w.n) {
        waiters.splice(waiters.indexOf(w), 1)
        w.resolve()
      }
    }
  })
  return {
    seen,
    /** Resolves with the n-th event (1-based) once it arrived. */
    async nth(n: number, timeoutMs = 15_000): Promise<AgentEvents[K]> {
      if (seen.length < n) {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(
            () => reject(new Error(`timed out waiting for ${event} #${n}`)),
            timeoutMs,
          )
          waiters.push({
            n,
            resolve: () => {
              clearTimeout(timer)
              resolve()
            },
          })
        })
      }
      return seen[n - 1]!
    },
  }
}
