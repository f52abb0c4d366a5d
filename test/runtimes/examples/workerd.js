// workerd serve config.capnp, after: esbuild inbox.js --bundle --format=esm --conditions=workerd,worker,browser --outfile=worker.js

import { generateKeyPair } from '@agentmsg/core'
import { createIdentityDocument, createKeyResolver } from '@agentmsg/core/identity'
import { createInboxHandler } from '@agentmsg/transport-https'

let inbox // one per isolate, made on the first request (env comes with it)
export default {
  async fetch(request, env, ctx) {
    inbox ??= createInboxHandler({
      agentId: env.AGENT_URL, // https://localhost:8443, the socket below
      identityDocument: createIdentityDocument({
        agentId: env.AGENT_URL,
        publicKey: (await generateKeyPair()).publicKey,
      }),
      resolver: createKeyResolver(), // did:key senders; add fetchIdentity for URL agents
      onMessage: async (message, { level }) => console.log(level, message.body.parts[0].text),
    })
    const response = await inbox.fetch(request, {
      clientAddress: request.headers.get('CF-Connecting-IP'),
    })
    ctx.waitUntil(inbox.idle()) // the message is handled after the 202: keep the request until then
    return response
  },
}
