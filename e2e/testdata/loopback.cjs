// loopback.cjs: preloaded (node --require) into a third-party HTTP server
// that the e2e tests start, so that it listens on loopback only, whatever it
// asks for, and says on stderr which port it got (start it with PORT=0).
"use strict";
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (args.length > 0 && typeof args[0] === "object" && args[0] !== null) {
    args[0] = { ...args[0], host: "127.0.0.1" };
  } else if (typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0]))) {
    const rest = args.slice(1).filter((a) => typeof a !== "string");
    args = [Number(args[0]), "127.0.0.1", ...rest];
  }
  this.once("listening", () => {
    const a = this.address();
    if (a && typeof a === "object") {
      process.stderr.write(`loopback.cjs: listening on ${a.address}:${a.port}\n`);
    }
  });
  return listen.apply(this, args);
};
