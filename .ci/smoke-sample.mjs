// Waits for an app with the sample's routes to listen, then expects 200, 200, 429 on
// /hello/sayHi, each with RateLimit and RateLimit-Policy headers, and Retry-After on the 429.
// Used for the sample app and for the Nest 11 CommonJS app of nest11-smoke.sh.
const base = process.argv[2];
const deadline = Date.now() + 120_000;
const url = `${base}/hello/sayHi`;

async function get() {
  const res = await fetch(url);
  await res.text();
  return res;
}

for (;;) {
  try {
    await fetch(`${base}/items/health`);
    break;
  } catch {
    if (Date.now() > deadline) throw new Error(`the sample did not start listening at ${base}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const responses = [await get(), await get(), await get()];
const codes = responses.map((r) => r.status);
const retryAfter = responses[2].headers.get('retry-after');
console.log(
  `statuses ${codes.join(', ')}; Retry-After ${retryAfter}; RateLimit ${responses[2].headers.get('ratelimit')}`,
);
const withHeaders = responses.every(
  (r) => r.headers.has('ratelimit') && r.headers.has('ratelimit-policy'),
);
console.log(`RateLimit-Policy ${responses[2].headers.get('ratelimit-policy')}`);
if (codes.join() !== '200,200,429' || !(Number(retryAfter) >= 1) || !withHeaders) {
  console.error(
    'expected 200, 200, 429 with RateLimit and RateLimit-Policy, Retry-After on the 429',
  );
  process.exit(1);
}
