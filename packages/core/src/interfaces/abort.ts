/** Options every async SDK method accepts. */
export interface AbortOptions {
  /** Abort the operation; the promise rejects with the signal's reason. */
  signal?: AbortSignal
}
