/**
 * The demo's pages on the relay's origin: a fixed table of paths under /demo/ (no file system
 * lookup from a request path, so no traversal), GET and HEAD only, each with its content type,
 * a strict Content-Security-Policy (scripts and styles from this origin only, no inline code;
 * connections to this origin and the relay only) and no caching. `/` redirects to the page.
 * Every other path is the relay's (`serveRelay({ intercept })`).
 */
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const DEMO_PATH = '/demo/'
const pageDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'page')

const TYPES = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  json: 'application/json; charset=utf-8',
}

/** The CSP of every demo answer; `relayUrl` is also reached as wss:// (the WebSocket pane). */
export function contentSecurityPolicy(relayUrl) {
  const relay = new URL(relayUrl)
  const wss = `wss://${relay.host}`
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self' ${relay.origin} ${wss}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ')
}

/**
 * The `intercept` of the demo's relay.
 * @param {{ relayUrl: () => string, script: string, config: () => object | undefined }} o
 *   `script` is the bundled page; `config()` what the page is told (undefined while starting).
 */
export async function demoRoutes(o) {
  const files = new Map([
    [DEMO_PATH, { type: TYPES.html, body: await readFile(path.join(pageDir, 'index.html')) }],
    [
      `${DEMO_PATH}style.css`,
      { type: TYPES.css, body: await readFile(path.join(pageDir, 'style.css')) },
    ],
    [`${DEMO_PATH}app.js`, { type: TYPES.js, body: o.script }],
  ])
  const headers = (type) => ({
    'content-type': type,
    'content-security-policy': contentSecurityPolicy(o.relayUrl()),
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cross-origin-opener-policy': 'same-origin',
    'cache-control': 'no-store',
  })
  const text = (status, body, extra = {}) =>
    new Response(body, { status, headers: { ...headers('text/plain; charset=utf-8'), ...extra } })

  return (request) => {
    const { pathname } = new URL(request.url)
    const ours = pathname === '/' || pathname === '/demo' || pathname.startsWith(DEMO_PATH)
    if (!ours) return undefined
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      return text(405, 'method not allowed\n', { allow: 'GET, HEAD' })
    }
    if (pathname === '/' || pathname === '/demo') {
      return text(308, `the demo is at ${DEMO_PATH}\n`, { location: DEMO_PATH })
    }
    let file = files.get(pathname)
    if (pathname === `${DEMO_PATH}config.json`) {
      const config = o.config()
      if (!config) return text(503, 'starting, try again in a moment\n', { 'retry-after': '1' })
      file = { type: TYPES.json, body: JSON.stringify(config) }
    }
    if (!file) return text(404, 'not found\n')
    const body = request.method === 'HEAD' ? null : file.body
    return new Response(body, { status: 200, headers: headers(file.type) })
  }
}
