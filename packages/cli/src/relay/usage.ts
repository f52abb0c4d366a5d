/**
 * `agentmsg relay --help` and the command's errors: a usage or input error exits 2 with one
 * line, a relay that cannot start exits 1.
 */
import { RELAY_LOG_LEVELS } from '@agentmsg/relay'

export const RELAY_USAGE = `usage: agentmsg relay --data DIR [--host H] [--port P] [--public-url URL]
                      (--dev-tls | --tls-cert F --tls-key F) [--ca F ...]
                      [--allow-private LIST] [--max-storage SIZE] [rate limits]
                      [--store postgres://USER@HOST/DB [--store-schema NAME]]
                      [--config FILE] [--metrics-port P] [--log-level L]

Run a relay (PROFILE §9) over HTTPS with its SQLite store in DIR/relay.sqlite, or on a
PostgreSQL database that several relay processes share. Ctrl-C (SIGINT) or SIGTERM stop it
cleanly: new publishes get 503, those in flight are stored and answered, streams are told to
reconnect, the store is flushed, exit 0 (a second signal stops at once).
  --port P          default 8443; --host H: default 127.0.0.1
  --public-url URL  its public base URL (default https://<host>:<port>)
  --dev-tls         a development certificate for localhost, 127.0.0.1 and ::1, issued by this
                    machine's dev CA ($AGENTMSG_HOME/dev-ca/ca.pem, made on first use): clients
                    trust that one file
  --tls-cert F --tls-key F   a real certificate and its key (PEM)
  --ca F            trust this CA too when fetching URL agents' identity documents and calling
                    webhooks (a dev inbox's: the dev CA; no NODE_EXTRA_CA_CERTS needed)
  --allow-private   hosts or ranges on private or loopback addresses it may fetch from (a URL
                    agent on 127.0.0.1 needs --allow-private 127.0.0.1)
  --trusted-proxies LIST   load balancer / proxy addresses or CIDR ranges whose
                    X-Forwarded-For the per-address limits believe (several relay nodes behind
                    one balancer: its addresses)
  --max-storage     what all mailboxes hold together (bytes, or e.g. 512MiB, 10GiB; default 10GiB)
  --store URL       keep mailboxes in PostgreSQL (postgres:// or postgresql:// URL) instead of
                    DIR/relay.sqlite: every relay process given the same URL and schema serves
                    the same mailboxes (DIR still holds --dev-tls files)
  --store-schema N  the PostgreSQL schema of the tables (default agentmsg_relay)
  --rate-limit N    requests per minute from one client address (IPv6: per /64), or
                    "unlimited" for a load test from one machine (default 600)
  --burst N         requests one address may send at once before the rate applies (default 100)
  --sender-rate-limit N   publishes per minute per verified sender, or "unlimited" (default 60)
  --sender-burst N  a sender's burst (default 20)
  --max-reads-per-address N   request bodies read at once per address (default 8)
  --streams-per-agent N       open SSE and WebSocket streams per agent (default 4)
  --config FILE     limits and quotas (PROFILE §6, §9) from a JSON file, checked at start;
                    a flag given too wins over the file (see the relay README)
  --metrics-port P  Prometheus metrics at http://<metrics host>:P/metrics (off unless given;
                    never on the relay's own port)
  --metrics-host H  address of the metrics listener (default 127.0.0.1: plain HTTP, no auth)
  --log-level L     ${RELAY_LOG_LEVELS.join(', ')} (default info): JSON lines on stderr,
                    one per refused request
  --shutdown-timeout S   seconds a SIGTERM or SIGINT may take to drain and stop (default 10);
                    past it the relay exits 1

examples:
  agentmsg relay --data ./relay --port 9443 --dev-tls \\
      --ca "$AGENTMSG_HOME/dev-ca/ca.pem" --allow-private 127.0.0.1
  agentmsg relay --data ./load --dev-tls --rate-limit unlimited --sender-rate-limit unlimited
      (a load test from this machine: one address, a few senders)
`

/** A failure of the command: its code and exit code (2: usage or input). */
export class RelayCommandError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly exitCode: 1 | 2 = 2,
  ) {
    super(message)
  }
}

/** A usage error (exit 2) that points at --help. */
export const usage = (message: string) =>
  new RelayCommandError('usage', `${message} — see agentmsg relay --help`)
