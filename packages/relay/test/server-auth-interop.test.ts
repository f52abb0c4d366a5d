/**
 * A stock RFC 9421 client drives a real relay over HTTPS (PROFILE §9 agent auth): requests
 * signed by `http-message-signatures` with Node's own Ed25519 key and the library's own
 * parameter order subscribe and read a mailbox.
 */
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { utf8Encode } from '@agentmsg/core/http'
import { describe, expect, it } from 'vitest'
import {
  stockSignedHeaders,
  stockSignerAgent,
} from '../../conformance/test/support/stock-rfc9421.js'
import { relayPerTest } from './helpers.js'

const { start } = relayPerTest()

describe('a stock RFC 9421 client', () => {
  it('subscribes, reads its mailbox and acknowledges, signing with its own parameter order', async () => {
    const relay = await start()
    const { client } = relay
    const bob = stockSignerAgent()
    const send = async (method: string, pathAndQuery: string, body?: unknown) => {
      const url = new URL(relay.url + pathAndQuery).href
      const bytes = body === undefined ? undefined : utf8Encode(JSON.stringify(body))
      const headers = await stockSignedHeaders(bob, method, url, bytes)
      const res = await client.fetch(url, {
        method,
        headers,
        ...(bytes ? { body: bytes as Uint8Array<ArrayBuffer> } : {}),
      })
      return { res, headers }
    }

    const sub = await send('POST', '/relay/subscribe', { subscribe: { agent: bob.id } })
    expect(sub.headers['Signature-Input']).toMatch(
      /^sig1=\("@method" "@target-uri" "content-digest"\);keyid="[^"]+";alg="ed25519";created=\d+;nonce="/,
    )
    expect(sub.res.status).toBe(201)
    expect(await sub.res.json()).toMatchObject({ status: 'subscribed' })

    const alice = await fixtureAgent()
    const msg = await signedMessage(alice, bob.id)
    expect((await client.publish(msg)).status).toBe(202)

    const mailbox = `/relay/messages?agent=${encodeURIComponent(bob.id)}`
    const page = await send('GET', mailbox)
    expect(page.res.status).toBe(200)
    const json = (await page.res.json()) as { messages: Array<{ message_id: string }> }
    expect(json.messages.map((m) => m.message_id)).toEqual([msg.message_id])

    const ack = await send('POST', '/relay/ack', {
      agent: bob.id,
      acks: [{ message_id: msg.message_id, from: alice.id }],
    })
    expect(ack.res.status).toBe(200)
    expect(await ack.res.json()).toEqual({ status: 'acknowledged', removed: 1 })
  })

  it('is refused on a replayed nonce, on another agent’s mailbox, and re-spelled with spaces verifies', async () => {
    const relay = await start()
    const { client } = relay
    const bob = stockSignerAgent()
    const carol = stockSignerAgent()
    const url = new URL(`${relay.url}/relay/messages?agent=${encodeURIComponent(bob.id)}`).href
    const subscribeUrl = new URL(`${relay.url}/relay/subscribe`).href
    const body = utf8Encode(JSON.stringify({ subscribe: { agent: bob.id } }))
    const subscribed = await client.fetch(subscribeUrl, {
      method: 'POST',
      headers: await stockSignedHeaders(bob, 'POST', subscribeUrl, body),
      body: body as Uint8Array<ArrayBuffer>,
    })
    expect(subscribed.status).toBe(201)

    // RFC 8941's optional spaces in Signature-Input: the relay serialises what it parsed.
    const headers = await stockSignedHeaders(bob, 'GET', url)
    const spaced = headers['Signature-Input']!.replace('(', '(  ').replaceAll(';', '; ')
    const first = await client.fetch(url, {
      headers: { ...headers, 'Signature-Input': spaced },
    })
    expect(first.status).toBe(200)
    // The same signature again: its nonce is remembered.
    const replay = await client.fetch(url, { headers })
    expect(replay.status).toBe(401)
    expect(((await replay.json()) as { code: string }).code).toBe('invalid_signature')
    // A valid signature by another agent on Bob's mailbox.
    const foreign = await client.fetch(url, {
      headers: await stockSignedHeaders(carol, 'GET', url),
    })
    expect(foreign.status).toBe(403)
    expect(((await foreign.json()) as { code: string }).code).toBe('forbidden')
  })
})
