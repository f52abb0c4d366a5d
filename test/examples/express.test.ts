/**
 * examples/express as it is: an Express 5 app serving Bob's inbox at /agents/bob over HTTPS
 * (development CA). A real agent delivers to it; a tampered message is refused through Express;
 * and an app that puts `express.json()` before the inbox is told so, not answered "bad
 * signature".
 */
import { once } from 'node:events'
import { createServer } from 'node:https'
import { getRequestListener } from '@agentmsg/transport-https/node'
import express from 'express'
import { describe, expect, it } from 'vitest'
import { startServer } from '../../examples/express/src/server.js'
import { describeMountedInbox } from './mounted-inbox.js'

const exampleEnv = describeMountedInbox('express', startServer)

describe('getRequestListener in Express after a body parser', () => {
  it('answers 500 and reports that the body was already read', async () => {
    const errors: unknown[] = []
    const inbox = { fetch: async () => new Response('never reached') }
    const misordered = express()
    misordered.use(express.json())
    misordered.use('/inbox', getRequestListener(inbox, { onError: (e) => errors.push(e) }))
    const server = createServer({ ...exampleEnv().tls, minVersion: 'TLSv1.2' }, misordered)
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const { port } = server.address() as { port: number }
    try {
      const response = await exampleEnv().fetch(`https://127.0.0.1:${port}/inbox`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"a":1}',
      })
      expect(response.status).toBe(500)
      expect(String(errors[0])).toMatch(/already read; mount before body parsers/)
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })
})
