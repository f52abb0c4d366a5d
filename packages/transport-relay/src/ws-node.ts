/** The WebSocket constructor on Node: the `ws` package (Node 20 has no global WebSocket). */
export { WebSocket } from 'ws'
