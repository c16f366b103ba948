#!/usr/bin/env bash
# CI: the packed package inside a Nest 11 CommonJS app, loaded with require() through Node's
# require(esm). Builds, packs, installs into a scratch app, expects 200, 200, 429 on a limited
# route. Run from anywhere: bash .ci/nest11-smoke.sh
set -euo pipefail
cd "$(dirname "$0")/.."

scratch=$(mktemp -d)
app_pid=
cleanup() {
  if [[ -n $app_pid ]]; then kill -- -"$app_pid" 2>/dev/null || true; fi
  rm -rf "$scratch"
}
trap cleanup EXIT

npm run build
tarball=$(npm pack --silent --pack-destination "$scratch" | tail -n 1)
echo "Nest 11 smoke test: $tarball in a CommonJS app at $scratch"

# No "type": "module": every .js file here is CommonJS. ioredis 5 covers the older peer range,
# as an app still on Nest 11 is likely to have.
cat >"$scratch/package.json" <<JSON
{
  "name": "nest11-commonjs-smoke",
  "private": true,
  "dependencies": {
    "@nestjs/common": "^11.0.0",
    "@nestjs/core": "^11.0.0",
    "@nestjs/platform-express": "^11.0.0",
    "ioredis": "^5.0.0",
    "nest-rate-limit": "file:./$tarball",
    "reflect-metadata": "^0.2.0",
    "rxjs": "^7.8.0"
  }
}
JSON

# The routes of the sample app, with each decorator applied by hand the way tsc's output would,
# so that the app needs no compiler.
cat >"$scratch/main.js" <<'JS'
require('reflect-metadata');
const { Controller, Get, Module } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const { RateLimit, RateLimitModule, SkipRateLimit } = require('nest-rate-limit');

function decorateMethod(cls, name, ...decorators) {
  const descriptor = Object.getOwnPropertyDescriptor(cls.prototype, name);
  for (const decorate of decorators.reverse()) decorate(cls.prototype, name, descriptor);
}

class HelloController {
  sayHi() {
    return { message: 'Hi!' };
  }
}
decorateMethod(HelloController, 'sayHi', RateLimit({ period: 30, threshold: 2 }), Get('sayHi'));
Controller('hello')(HelloController);

class ItemsController {
  health() {
    return { status: 'ok' };
  }
}
decorateMethod(ItemsController, 'health', SkipRateLimit(), Get('health'));
Controller('items')(ItemsController);

class AppModule {}
Module({ imports: [RateLimitModule.forRoot()], controllers: [HelloController, ItemsController] })(
  AppModule,
);

NestFactory.create(AppModule, { logger: ['error', 'warn'] })
  .then((app) => app.listen(Number(process.env.PORT), '127.0.0.1'))
  .then(() => console.log(`listening on ${process.env.PORT}, Node ${process.version}`));
JS

(cd "$scratch" && npm install --no-audit --no-fund --loglevel=error)
node -e "for (const p of ['@nestjs/core', 'ioredis']) console.log(p, require('$scratch/node_modules/' + p + '/package.json').version)"

port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
log="$scratch/app.log"
# --trace-require-module prints the require(esm) of the package: proof of how it was loaded.
(cd "$scratch" && PORT="$port" NO_COLOR=1 exec setsid node --trace-require-module=all main.js) >"$log" 2>&1 &
app_pid=$!
node .ci/smoke-sample.mjs "http://127.0.0.1:$port" &
check_pid=$!
# If the app dies while starting (say, require() of the package throws), say so now rather than
# when the check gives up waiting for it.
while kill -0 "$check_pid" 2>/dev/null; do
  if ! kill -0 "$app_pid" 2>/dev/null; then
    kill "$check_pid" 2>/dev/null || true
    echo "the Nest 11 app exited before answering:"
    cat "$log"
    exit 1
  fi
  sleep 0.2
done
if ! wait "$check_pid"; then
  cat "$log"
  exit 1
fi
cat "$log"
