// Preloaded into Node servers the tests start (node -r this-file ...): a listen() given only a
// port binds 127.0.0.1 instead of every interface, so a test server is reachable from this
// machine only.
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const portOnly = typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0]));
  if (portOnly && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
