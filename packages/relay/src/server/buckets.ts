/**
 * The client-address bucket of each relay request (PROFILE §6), set by the routing step and
 * read where a per-bucket share is charged (the nonce memory of agent auth, PROFILE §9), so
 * the endpoints in between need not carry it.
 */
const buckets = new WeakMap<Request, string>()

/** Remember the bucket `request` came from (nothing when per-address limiting is off). */
export function setRequestBucket(request: Request, bucket: string | undefined): void {
  if (bucket !== undefined) buckets.set(request, bucket)
}

/** The bucket `request` came from, or undefined. */
export function requestBucket(request: Request): string | undefined {
  return buckets.get(request)
}
