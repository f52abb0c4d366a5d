/**
 * serveRelay's `intercept` hook: what it answers never reaches the relay; what it passes on
 * (`undefined`) is the relay's, body included; WebSocket upgrades never go through it.
 */
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { describe, expect, it } from 'vitest'
import { WebSocket } from 'ws'
import { relayPerTest } from './helpers.js'

const relays = relayPerTest()

describe('serveRelay intercept', () => {
  it('answers its own paths and hands every other request, body included, to the relay', async () => {
    const seen: string[] = []
    const r = await relays.start({
      intercept: (request) => {
        const { pathname } = new URL(request.url)
        seen.push(`${request.method} ${pathname}`)
        if (pathname !== '/demo/hello') return undefined
        return new Response('hello from the hook', { headers: { 'content-type': 'text/plain' } })
      },
    })
    const own = await r.client.request('GET', '/demo/hello')
    expect(own.status).toBe(200)
    expect(await own.text()).toBe('hello from the hook')

    // Passed on: the relay answers (its own 404 body), and a publish with a body is stored.
    const other = await r.client.request('GET', '/demo/other')
    expect(other.status).toBe(404)
    expect(await other.json()).toMatchObject({ status: 'error' })
    const alice = await fixtureAgent()
    const bob = await fixtureAgent()
    await r.client.subscribe(bob)
    const published = await r.client.publish(await signedMessage(alice, bob.id))
    expect(published.status).toBe(202)
    const { messages } = await r.client.retrieve(bob)
    expect(messages).toHaveLength(1)

    expect(seen).toEqual([
      'GET /demo/hello',
      'GET /demo/other',
      'POST /relay/subscribe',
      'POST /relay/publish',
      'GET /relay/messages',
    ])
  })

  it('does not see WebSocket upgrades, which still reach the relay', async () => {
    const seen: string[] = []
    const r = await relays.start({
      intercept: (request) => {
        seen.push(new URL(request.url).pathname)
        return new Response('intercepted', { status: 418 })
      },
    })
    const ws = new WebSocket(`${r.url.replace(/^https/, 'wss')}/relay/ws`, {
      ca: r.cert.ca ?? r.cert.cert,
    })
    relays.defer(() => ws.close())
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve())
      ws.once('error', reject)
    })
    expect(seen).toEqual([])
  })

  it('a hook that throws is answered 500 and reported, the server keeps serving', async () => {
    const errors: unknown[] = []
    const r = await relays.start({
      intercept: (request) => {
        if (new URL(request.url).pathname === '/boom') throw new Error('hook failed')
        return undefined
      },
    })
    const boom = await r.client.request('GET', '/boom')
    expect(boom.status).toBe(500)
    errors.push(...r.errors.splice(0))
    expect(String(errors[0])).toContain('hook failed')
    const after = await r.client.request('GET', '/elsewhere')
    expect(after.status).toBe(404)
    expect(await after.json()).toMatchObject({ status: 'error' })
  })
})
