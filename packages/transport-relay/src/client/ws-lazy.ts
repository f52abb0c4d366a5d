/**
 * What a WebSocket stream loads on its first connect (./relay-core.ts imports this lazily): the
 * connector and the platform's WebSocket constructor (`ws` on Node).
 */
export { WebSocket as PlatformWebSocket } from '#relay-ws'
export { wsConnector } from './ws-stream.js'
