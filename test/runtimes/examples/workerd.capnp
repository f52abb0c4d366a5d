using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [(name = "inbox", worker = (
    modules = [(name = "worker.js", esModule = embed "worker.js")],
    compatibilityDate = "2026-11-01",
    bindings = [(name = "AGENT_URL", fromEnvironment = "AGENT_URL")],
  ))],
  sockets = [(name = "https", address = "127.0.0.1:8443", service = "inbox", https = (
    options = (injectRequestHeaders = [(name = "CF-Connecting-IP", value = "127.0.0.1")]),
    tlsOptions = (keypair = (privateKey = embed "key.pem", certificateChain = embed "cert.pem")),
  ))],
);
