/**
 * The matrix program on workerd: ./../app.mjs as a Worker's `fetch` handler, behind an https
 * socket (./config.capnp). Bundled by ../run.mjs with esbuild as wrangler bundles a Worker
 * (conditions `workerd`, `worker`, `browser`). The vectors are read in place through a disk
 * service bound as VECTORS; workerd's socket passes no peer address, and the config names it in
 * CF-Connecting-IP as Cloudflare's edge does.
 */
import { createTestApp } from '../app.mjs'

let app

export default {
  fetch(request, env, ctx) {
    app ??= createTestApp({
      loadVector: async (name) => {
        const response = await env.VECTORS.fetch(`http://vectors/${name}`)
        if (!response.ok) throw new Error(`vector ${name}: ${response.status}`)
        return response.text()
      },
    })
    const { response, done } = app.handle(request, request.headers.get('CF-Connecting-IP'))
    // Work that outlives the response (the session's event stream; an inbox message, handled
    // after its 202) is cancelled with the request unless the Worker waits for it.
    if (done) ctx.waitUntil(done)
    return response
  },
}
