/**
 * Whether a pane's relay stream is up, watched where the page hands its agent the network: the
 * `streamFetch` that opens its SSE stream and the `WebSocket` it streams over. Up once the relay
 * answers the stream, down when it ends or cannot be opened; the agent reconnects by itself.
 * (The agent has no stream event of its own: one in @agentmsg/client put the relay-only browser
 * bundle over its size cap.)
 */
export function watchStream(onChange: (up: boolean) => void) {
  const down = () => onChange(false)
  const streamFetch: typeof fetch = async (input, init) => {
    const res = await fetch(input, init).catch((e: unknown) => {
      down()
      throw e
    })
    if (!res.ok || !res.body) {
      down()
      return res
    }
    onChange(true)
    const reader = res.body.getReader()
    const body = new ReadableStream<Uint8Array>({
      async pull(out) {
        try {
          const chunk = await reader.read()
          if (chunk.done) {
            down()
            out.close()
          } else out.enqueue(chunk.value)
        } catch (e) {
          down()
          out.error(e)
        }
      },
      cancel: (reason) => {
        down()
        return reader.cancel(reason)
      },
    })
    return new Response(body, { status: res.status, headers: res.headers })
  }
  class WatchedSocket extends WebSocket {
    constructor(url: string) {
      super(url)
      this.addEventListener('open', () => onChange(true))
      this.addEventListener('close', down)
    }
  }
  return { streamFetch, WebSocket: WatchedSocket }
}
