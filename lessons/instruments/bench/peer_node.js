// A peer of lesson 03's connector for connector-vs-peers (beside it): Node.js's http module with its
// defaults, one event loop on one thread, on the same two routes.
//
//   node peer_node.js --port 0
'use strict';
const http = require('http');

const at = process.argv.indexOf('--port');
const port = at >= 0 ? Number(process.argv[at + 1]) : 8080;
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`peer_node: --port must be a port number, not '${process.argv[at + 1]}'`);
  process.exit(2);
}

// With Content-Length, as the other servers send, rather than Node's chunked default.
function answer(res, type, body) {
  res.writeHead(200, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) }).end(body);
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/hello') {
    answer(res, 'text/plain', 'hello\n');
  } else if (req.method === 'GET' && req.url === '/benchmark') {
    // A timer on the event loop: the one thread serves others meanwhile.
    setTimeout(() => {
      answer(res, 'application/json', '{"message":"slept with setTimeout","sleep_ms":1000}\n');
    }, 1000);
  } else {
    res.writeHead(404).end();
  }
});
server.on('error', (err) => {
  console.error(`peer_node: ${err.message}`);
  process.exit(1);
});
server.listen(port, '127.0.0.1', () => {
  console.log(`peer_node: listening on http://127.0.0.1:${server.address().port}`);
});
process.on('SIGTERM', () => process.exit(0));
