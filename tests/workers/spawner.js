// A Node worker that starts a child with piped stdio (libuv uses a socketpair) and resolves a name.
"use strict";
const { spawn } = require("child_process");
const dns = require("dns");

const child = spawn(process.execPath, ["-e", "process.stdout.write('child says hello')"], {
  stdio: ["pipe", "pipe", "pipe"],
});
let said = "";
child.stdout.on("data", (chunk) => { said += chunk; });
child.on("close", (code) => {
  dns.lookup("localhost", (err, address) => {
    const out = { child: said, childExit: code, lookup: err ? `failed: ${err.code}` : address };
    process.stdout.write(JSON.stringify(out) + "\n");
  });
});
