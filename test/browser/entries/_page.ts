/**
 * In-page side of the harness (`../harness.ts`): entries run their checks and publish one
 * JSON-serialisable result, which the spec reads with `page.evaluate`.
 */

declare global {
  // eslint-disable-next-line no-var
  var __agentmsgResults: Promise<unknown> | undefined
}

/** Run `checks` and expose their promise as `globalThis.__agentmsgResults`. */
export function publishResults<T>(checks: () => Promise<T>): void {
  globalThis.__agentmsgResults = checks()
}

/** Fetch a published vector file served by the harness from `test/vectors`. */
export async function fetchVector(name: string): Promise<Response> {
  const res = await fetch(`/vectors/${name}`)
  if (!res.ok) throw new Error(`vector ${name}: HTTP ${res.status}`)
  return res
}

/** Fetch and parse a JSON vector file. */
export async function vectorJson<T = unknown>(name: string): Promise<T> {
  return (await fetchVector(name)).json() as Promise<T>
}

/** Fetch a text vector file. */
export async function vectorText(name: string): Promise<string> {
  return (await fetchVector(name)).text()
}
