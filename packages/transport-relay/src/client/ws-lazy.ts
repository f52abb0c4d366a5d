/** What a WebSocket stream imports on its first connect: the connector and the platform's WebSocket. */
export { WebSocket as PlatformWebSocket } from '#relay-ws'
export { wsConnector } from './ws-stream.js'
