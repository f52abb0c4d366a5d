/**
 * Attack at a real inbox on 127.0.0.1: a genuine signed message gains an
 * extra `"__proto__"` member in its signature object. Every member but `sig` is bound
 * (PROFILE §3), so the inbox refuses it (401 `invalid_signature`) and delivers nothing; the
 * unmodified message is accepted. Unit cases: packages/core/test/attack-signature-proto.test.ts.
 */
import { fixtureAgent, signedMessage } from '@agentmsg/conformance/portable'
import { memoryStorage } from '@agentmsg/core'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createNodeAgent, type NodeAgent } from '../src/node.js'
import { collect, createEnv, type Env, removeTempDirs } from './helpers.js'

let env: Env
const open: NodeAgent[] = []
beforeAll(async () => {
  env = await createEnv()
})
afterEach(async () => {
  await Promise.all(open.splice(0).map((a) => a.close()))
})
afterAll(removeTempDirs)

describe('attack: an unsigned "__proto__" member in a signature object', () => {
  it('is refused at the inbox', async () => {
    const alice = await createNodeAgent({
      fetch: env.fetch,
      storage: memoryStorage(),
      inbox: { tls: { cert: env.cert.cert, key: env.cert.key } },
      sendOnly: true,
    })
    open.push(alice)
    const received = collect(alice, 'message')
    const mallory = await fixtureAgent()
    const post = async (body: string) => {
      const res = await env.fetch(`${alice.inboxUrl}/.well-known/agentmsg/inbox`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      })
      return { status: res.status, code: ((await res.json()) as { code?: string }).code }
    }
    const withProto = (text: string, value: string) => {
      const at = text.indexOf('{', text.indexOf('"signatures":[')) + 1
      return `${text.slice(0, at)}"__proto__":${value},${text.slice(at)}`
    }

    // A string value is what `params[k] = v` silently dropped: the message verified with it.
    for (const value of ['"role=admin"', '{"alg":"none","role":"admin"}']) {
      const tampered = withProto(JSON.stringify(await signedMessage(mallory, alice.id)), value)
      expect(await post(tampered)).toEqual({ status: 401, code: 'invalid_signature' })
    }
    const genuine = JSON.stringify(await signedMessage(mallory, alice.id))
    expect((await post(genuine)).status).toBe(202)
    expect((await received.nth(1)).message.security?.signatures[0]).not.toHaveProperty('role')
    expect(received.seen).toHaveLength(1)
  })
})
