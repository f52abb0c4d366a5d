import { describe, expect, it } from 'vitest'
import { socketDetail } from './support/socket-detail.js'

describe('socketDetail', () => {
  it('finds what a port scanner reads in an error', () => {
    expect(socketDetail('connect ECONNREFUSED 127.0.0.1:8443')).toBe('ECONN')
    expect(socketDetail('Client network socket disconnected before secure TLS connection')).toBe(
      'socket',
    )
    expect(socketDetail('TLS handshake failed')).toBe('TLS')
    expect(socketDetail('self signed certificate in certificate chain')).toBe('self signed')
    expect(socketDetail('getaddrinfo ENOTFOUND intranet.local')).toBe('ENOTFOUND')
  })

  it('does not read identifiers that spell those words by chance', () => {
    // A real did:key from CI whose base58 spells "TLS" (kMTLSnU).
    const did = 'did:key:z6Mkj84KcYjycJavcPi8kMTLSnU43MQyTPT8FM9yRAtBd7zQ'
    expect(socketDetail(`an error reply to ${did} could not be delivered`)).toBeUndefined()
    expect(socketDetail('message 01HSOCKETECONNTLS0000000000 refused')).toBeUndefined()
    expect(socketDetail(`delivery to ${did} failed: ECONNRESET`)).toBe('ECONN')
  })
})
