// Loaded into the writer worker when the store runs from its TypeScript sources (this
// repository's tests and examples), so the worker can load `sqlite-writer.ts`; never built
// into dist/, whose writer is plain JavaScript.
import { register } from 'tsx/esm/api'

register()
