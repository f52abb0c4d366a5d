/** The WebSocket constructor in browsers and runtimes that have a global one. */
export const WebSocket: typeof globalThis.WebSocket = globalThis.WebSocket
