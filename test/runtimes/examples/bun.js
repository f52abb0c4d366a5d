// bun inbox.js: a did:key sender's message, received on Bun.serve

import { generateKeyPair } from '@agentmsg/core'
import { createIdentityDocument, createKeyResolver } from '@agentmsg/core/identity'
import { createInboxHandler } from '@agentmsg/transport-https'

const agentId = process.env.AGENT_URL // https://localhost:8443, this server's origin
const keys = await generateKeyPair() // keep keys.secretKey to sign as agentId
const inbox = createInboxHandler({
  agentId,
  identityDocument: createIdentityDocument({ agentId, publicKey: keys.publicKey }),
  resolver: createKeyResolver(), // did:key senders; add fetchIdentity for URL agents
  onMessage: async (message, { level }) => console.log(level, message.body.parts[0].text),
})
Bun.serve({
  port: Number(new URL(agentId).port),
  tls: { cert: Bun.file('cert.pem'), key: Bun.file('key.pem') },
  fetch: (request, server) =>
    inbox.fetch(request, { clientAddress: server.requestIP(request)?.address }),
})
