// deno run --allow-net --allow-env --allow-read inbox.js: a did:key sender's message, received on Deno.serve

import { generateKeyPair } from '@agentmsg/core'
import { createIdentityDocument, createKeyResolver } from '@agentmsg/core/identity'
import { createInboxHandler } from '@agentmsg/transport-https'

const agentId = Deno.env.get('AGENT_URL') // https://localhost:8443, this server's origin
const keys = await generateKeyPair() // keep keys.secretKey to sign as agentId
const inbox = createInboxHandler({
  agentId,
  identityDocument: createIdentityDocument({ agentId, publicKey: keys.publicKey }),
  resolver: createKeyResolver(), // did:key senders; add fetchIdentity for URL agents
  onMessage: async (message, { level }) => console.log(level, message.body.parts[0].text),
})
const tls = { cert: Deno.readTextFileSync('cert.pem'), key: Deno.readTextFileSync('key.pem') }
Deno.serve({ port: Number(new URL(agentId).port), ...tls }, (request, info) =>
  inbox.fetch(request, { clientAddress: info.remoteAddr.hostname }),
)
