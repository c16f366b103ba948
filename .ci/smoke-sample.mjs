// Waits for an app with the sample's routes to listen, then expects 200, 200, 429 on
// /hello/sayHi, each with RateLimit and RateLimit-Policy headers, and Retry-After on the 429;
// then the console at /rate-limits refused without $ADMIN_TOKEN, and listing that 429 with it.
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

// The console, mounted behind the admin token: refused without it; with it, the client just
// turned away on /hello/sayHi is on the list of the most limited.
const admin = { 'x-admin-token': process.env.ADMIN_TOKEN ?? '' };
const refused = await fetch(`${base}/rate-limits/api/top`);
await refused.text();
const top = await fetch(`${base}/rate-limits/api/top?window=60`, { headers: admin });
const listed = top.ok ? await top.json() : { trackers: [] };
console.log(`console: ${refused.status} without the token, ${top.status} with it`);
const onList = listed.trackers.some((t) => t.route === 'GET /hello/sayHi' && t.limited >= 1);
if (![401, 403].includes(refused.status) || top.status !== 200 || !onList) {
  console.error('expected the console refused without the token, and listing the 429 with it');
  console.error(JSON.stringify(listed));
  process.exit(1);
}
