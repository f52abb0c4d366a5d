// The authentication-level walk-through of `npm start` (scripts/start.mjs), on the built
// packages as an application uses them: Alice's receive side is core's `createReceiver`, the
// one receive pipeline every transport hands its deliveries to (PROFILE §6: validate, date
// window, verify, duplicate, auth level), fed here by hand instead of by a transport.

import {
  createIntroductionToken,
  createMessage,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  hmacSigner,
  signMessage,
} from '@agentmsg/core'
import { createIdentityDocument, createKeyResolver } from '@agentmsg/core/identity'
import { createReceiver, introducedIdentity, KeyStore } from '@agentmsg/core/receive'

const step = (s) => console.log(`\n▶ ${s}`)

step('Alice makes a did:key identity; Bob a URL identity')
const aliceKeys = await generateKeyPair()
const alice = didKeyFromPublicKey(aliceKeys.publicKey)
const bobKeys = await generateKeyPair()
const bob = 'https://bob.example/agents/bob'
const bobDoc = createIdentityDocument({
  agentId: bob,
  display: 'Bob',
  publicKey: bobKeys.publicKey,
  keyId: 'k1',
})
console.log({ alice, bob, bobKeys: bobDoc.keys.map((k) => `${k.key_id} (${k.status})`) })

step('Their humans share an introduction token out of band')
const token = createIntroductionToken()
const aliceStore = new KeyStore()
await aliceStore.addIntroductionToken(token)
const aliceResolver = createKeyResolver({ keyStore: aliceStore })

/** Resolves the promise `deliver` waits on once Alice's application has handled a message. */
const handled = new Map()
const receiver = createReceiver({
  agentId: alice,
  resolver: aliceResolver,
  // Alice's application: what runs for every accepted message, after the pipeline.
  onMessage: async (message, info) => {
    // A level-0 greeting introduces the sender's identity document (PROFILE §5).
    if (info.level === 0 && message.phase === 'greeting') {
      await aliceStore.addIntroducedKeys(introducedIdentity(message))
    }
    const level = await receiver.authLevels.conversationLevel(
      message.from.agent,
      message.conversation_id,
    )
    console.log(
      `  accepted ${message.phase} at level ${info.level} (${info.source}); conversation level ${level}`,
    )
    handled.get(message.message_id)?.()
  },
})

/** Hand a message to Alice's receiver, as a transport would, and say what became of it. */
async function deliver(message) {
  const done = new Promise((resolve) => handled.set(message.message_id, resolve))
  const outcome = await receiver.receive({ body: message, transport: 'demo' })
  if (outcome.status === 'accepted') return done
  if (outcome.status === 'duplicate')
    return console.log('  duplicate: accepted, not processed again')
  const e = outcome.error
  console.log(`  refused: ${e.status} ${e.code} — ${e.message}`)
}

step('Bob greets Alice at level 0 (HMAC with the token), carrying his identity document')
const greeting = await signMessage(
  createMessage({
    from: bob,
    to: alice,
    conversationId: 'c-demo',
    sequence: 0,
    phase: 'greeting',
    authLevel: 0,
    parts: [
      { type: 'text', text: 'Hi Alice, Bob here.' },
      { type: 'data', data: { identity: bobDoc } },
    ],
  }),
  await hmacSigner(token, bob),
)
await deliver(greeting)

step('Bob escalates: an Ed25519 signature with the introduced key (level 1)')
const bobSigner = ed25519Signer(bobKeys, `${bob}#k1`)
const request = await signMessage(
  createMessage({
    from: bob,
    to: alice,
    conversationId: 'c-demo',
    sequence: 1,
    phase: 'request',
    text: 'Lunch on Tuesday?',
  }),
  bobSigner,
)
await deliver(request)

step('The same message again (replay) and a tampered copy')
await deliver(request)
const tampered = structuredClone(request)
tampered.body.parts[0].text = 'Lunch on Wednesday?'
tampered.message_id = 'tampered-1'
await deliver(tampered)

step('A downgrade attempt back to level 0 in the same conversation')
await deliver(
  await signMessage(
    createMessage({
      from: bob,
      to: alice,
      conversationId: 'c-demo',
      sequence: 2,
      phase: 'update',
      text: 'never mind',
    }),
    await hmacSigner(token, bob),
  ),
)
await receiver.close()
console.log('\nDone. See README.md for the API; `npm test` runs the whole suite.')
