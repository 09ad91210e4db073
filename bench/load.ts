// Open-loop HTTPS load generator for the webhook benchmark, run as its own process so that it does not
// share an event loop with the server it measures. Sends AdmissionReviews round-robin at a fixed rate
// and prints one JSON line with latency percentiles (ms), errors and achieved rate.
//   node bench/load.ts --port P --reviews FILE --rate 1000 --seconds 60
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { benchArgs } from './args.ts';

const { values } = benchArgs('bench:load', {
  port: { type: 'string' },
  reviews: { type: 'string' },
  rate: { type: 'string', default: '1000' },
  seconds: { type: 'string', default: '60' },
});
const reviews = JSON.parse(readFileSync(values.reviews!, 'utf8')) as { path: string; body: string }[];
const rate = Number(values.rate);
const seconds = Number(values.seconds);
const agent = new Agent({ keepAlive: true, maxSockets: 64, rejectUnauthorized: false });
const latencies: number[] = [];
let errors = 0;
let sent = 0;
let inFlight = 0;

function send(review: { path: string; body: string }): void {
  const started = performance.now();
  inFlight++;
  const req = request(
    {
      host: '127.0.0.1',
      port: Number(values.port),
      path: review.path,
      method: 'POST',
      agent,
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(review.body) },
    },
    (res) => {
      let text = '';
      res.on('data', (c) => {
        text += c;
      });
      res.on('end', () => {
        inFlight--;
        latencies.push(performance.now() - started);
        if (res.statusCode !== 200 || !text.includes('"response"')) errors++;
      });
    },
  );
  req.on('error', () => {
    inFlight--;
    errors++;
  });
  req.end(review.body);
}

const start = performance.now();
const total = rate * seconds;
// A tick every millisecond sends whatever the schedule says is due, so the rate holds even when
// timers fire late (open loop: a slow server does not slow the senders down).
await new Promise<void>((resolve) => {
  const timer = setInterval(() => {
    const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * rate));
    while (sent < due) send(reviews[sent++ % reviews.length]!);
    if (sent >= total) {
      clearInterval(timer);
      resolve();
    }
  }, 1);
});
while (inFlight > 0) await new Promise((r) => setTimeout(r, 10));
const elapsed = (performance.now() - start) / 1000;
latencies.sort((a, b) => a - b);
const pct = (p: number) =>
  latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0;
console.log(
  JSON.stringify({
    sent,
    errors,
    seconds: Number(elapsed.toFixed(2)),
    achievedRate: Math.round(sent / elapsed),
    p50: Number(pct(50).toFixed(3)),
    p90: Number(pct(90).toFixed(3)),
    p99: Number(pct(99).toFixed(3)),
    max: Number((latencies.at(-1) ?? 0).toFixed(3)),
  }),
);
agent.destroy();
