# workerd config of the runtime matrix (test/runtimes/run.mjs copies it next to the bundled
# worker.js and the run's PEM files, then runs `workerd serve config.capnp` with the socket
# address and the vectors directory given on the command line).
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .matrixWorker),
    # test/vectors, read in place: --directory-path vectors=<dir>.
    (name = "vectors", disk = (writable = false)),
    # fetch() and WebSocket reach the Node side on loopback only, trusting the run's dev CA.
    (name = "loopback", network = (
      allow = ["local"],
      tlsOptions = (trustedCertificates = [embed "ca.pem"]),
    )),
  ],
  sockets = [
    # --socket-addr https=127.0.0.1:0; only loopback peers reach it, which the header says.
    (name = "https", service = "main", https = (
      options = (injectRequestHeaders = [(name = "CF-Connecting-IP", value = "127.0.0.1")]),
      tlsOptions = (keypair = (privateKey = embed "key.pem", certificateChain = embed "cert.pem")),
    )),
  ],
);

const matrixWorker :Workerd.Worker = (
  modules = [(name = "worker.js", esModule = embed "worker.js")],
  compatibilityDate = "2026-11-01",
  bindings = [(name = "VECTORS", service = "vectors")],
  globalOutbound = "loopback",
);
