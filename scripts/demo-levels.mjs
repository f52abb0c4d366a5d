// `npm start`: the runnable demo. It uses the built packages exactly as an application would.
// Today it shows core end to end (identities, signing, verification, auth levels, replay
// protection); the relay and browser demo join it when those packages land.
import {
  AuthLevelTracker,
  createIdentityDocument,
  createIntroductionToken,
  createKeyResolver,
  createMessage,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  hmacSigner,
  introducedIdentity,
  isAgentMsgError,
  KeyStore,
  ReplayGuard,
  signMessage,
  verifyMessage,
} from '@agentmsg/core'

const step = (s) => console.log(`\n▶ ${s}`)

step('Alice makes a did:key identity; Bob a URL identity')
const aliceKeys = await generateKeyPair()
const alice = didKeyFromPublicKey(aliceKeys.publicKey)
const bobKeys = await generateKeyPair()
const bob = 'https://bob.example/agents/bob'
const bobDoc = createIdentityDocument({ agentId: bob, display: 'Bob', publicKey: bobKeys.publicKey, keyId: 'k1' })
console.log({ alice, bob, bobKeys: bobDoc.keys.map((k) => `${k.key_id} (${k.status})`) })

step('Their humans share an introduction token out of band')
const token = createIntroductionToken()
const aliceStore = new KeyStore()
await aliceStore.addIntroductionToken(token)
const aliceResolver = createKeyResolver({ keyStore: aliceStore })
const levels = new AuthLevelTracker()
const replay = new ReplayGuard()

async function receive(message) {
  try {
    replay.checkFreshness(message)
    const v = await verifyMessage(message, aliceResolver)
    if ((await replay.checkAndRemember(message)) === 'duplicate') return console.log('  duplicate: accepted, not processed again')
    const d = await levels.admit({
      from: message.from.agent,
      conversationId: message.conversation_id,
      phase: message.phase,
      requestedLevel: message.auth_level,
      level: v.level,
      algs: v.signatures.map((s) => s.alg),
    })
    console.log(`  accepted ${message.phase} at level ${v.level} (${v.source}); conversation level ${d.level}`)
    return v
  } catch (e) {
    if (!isAgentMsgError(e)) throw e
    console.log(`  refused: ${e.status} ${e.code} — ${e.message}`)
  }
}

step('Bob greets Alice at level 0 (HMAC with the token), carrying his identity document')
const greeting = await signMessage(
  createMessage({
    from: bob, to: alice, conversationId: 'c-demo', sequence: 0, phase: 'greeting', authLevel: 0,
    parts: [{ type: 'text', text: 'Hi Alice, Bob here.' }, { type: 'data', data: { identity: bobDoc } }],
  }),
  await hmacSigner(token, bob),
)
await receive(greeting)
await aliceStore.addIntroducedKeys(introducedIdentity(greeting))

step('Bob escalates: an Ed25519 signature with the introduced key (level 1)')
const bobSigner = ed25519Signer(bobKeys, `${bob}#k1`)
const request = await signMessage(
  createMessage({ from: bob, to: alice, conversationId: 'c-demo', sequence: 1, phase: 'request', text: 'Lunch on Tuesday?' }),
  bobSigner,
)
await receive(request)

step('The same message again (replay) and a tampered copy')
await receive(request)
const tampered = structuredClone(request)
tampered.body.parts[0].text = 'Lunch on Wednesday?'
tampered.message_id = 'tampered-1'
await receive(tampered)

step('A downgrade attempt back to level 0 in the same conversation')
await receive(
  await signMessage(
    createMessage({ from: bob, to: alice, conversationId: 'c-demo', sequence: 2, phase: 'update', text: 'never mind' }),
    await hmacSigner(token, bob),
  ),
)
console.log('\nDone. See README.md for the API; `npm test` runs the whole suite.')
