/**
 * A web-standard handler (an inbox, a relay) as the per-method exports of a framework route
 * whose handlers take a `Request` and have no socket: Next.js App Router route handlers.
 */

/** What answers the requests: `fetch(request, { clientAddress })`, as an inbox or relay has. */
interface WebHandler {
  fetch(request: Request, info?: { clientAddress?: string }): Response | Promise<Response>
}

/** Options for {@link routeHandlers}. */
interface RouteHandlersOptions {
  /**
   * The client's address, for the per-address limits (PROFILE §6). A route handler sees no
   * socket, and a header is only as true as what set it: Next's `next start` keeps an
   * `X-Forwarded-For` the client sent and fills it from the socket only when absent. Read one
   * that your own server or proxy in front always overwrites. @default none: with per-address
   * limits on, the handler then answers 500 and reports `MissingClientAddressError`; turn
   * them off (`limits.perAddress: false`) only where the proxy in front limits per address.
   */
  clientAddress?: (request: Request) => string | null | undefined
}

/**
 * `GET`, `HEAD`, `POST`, `OPTIONS` and `DELETE` answered by `handler`, or by the handler
 * `handler()` resolves to (an agent created on first use).
 *
 * @example
 * // app/agents/bob/[...agentmsg]/route.ts, the inbox's basePath being '/agents/bob'
 * export const { GET, HEAD, POST, OPTIONS } = routeHandlers(agentInbox, {
 *   clientAddress: (request) => request.headers.get('x-forwarded-for'), // set by your server
 * })
 */
export function routeHandlers(
  handler: WebHandler | (() => WebHandler | PromiseLike<WebHandler>),
  options: RouteHandlersOptions = {},
) {
  const serve = async (request: Request): Promise<Response> => {
    const target = typeof handler === 'function' ? await handler() : handler
    const clientAddress = options.clientAddress?.(request) ?? undefined
    return target.fetch(request, clientAddress === undefined ? {} : { clientAddress })
  }
  return { GET: serve, HEAD: serve, POST: serve, OPTIONS: serve, DELETE: serve }
}
