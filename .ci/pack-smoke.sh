#!/usr/bin/env bash
# CI: the package as users get it. Builds and packs it once, installs the tarball (not a path
# mapping) into two throwaway apps and expects 200, 200, 429 on a limited route of each:
#   .ci/apps/nest11-cjs  Nest 11, CommonJS, require() of the ESM package through require(esm),
#                        memory store, ioredis 5 as an app still on Nest 11 is likely to have;
#                        it requires nest-rate-limit/testing too, through the exports map;
#   .ci/apps/nest12-esm  Nest 12, ESM, limits shared through a private redis-server by a
#                        node-redis client, whose keys must then be in Redis; it imports
#                        nest-rate-limit/testing too.
# Then the README's quick start, as written, in a third app (.ci/readme-app.mjs).
# Run from anywhere: bash .ci/pack-smoke.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# The apps mount the console behind this token, and the smoke check asks it with it.
export ADMIN_TOKEN=smoke-admin

scratch=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -- -"$pid" 2>/dev/null || true; done
  rm -rf "$scratch"
}
trap cleanup EXIT

free_port() {
  node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"
}

# npm pack builds the package itself (prepack), as it does for whoever packs or publishes it: pack
# from a clean clone of the commit, with no build in it, sharing only the installed dependencies.
git clone -q . "$scratch/clone"
ln -s "$PWD/node_modules" "$scratch/clone/node_modules"
tarball=$(cd "$scratch/clone" && npm pack --silent --pack-destination "$scratch" | tail -n 1)
if [[ $tarball != nest-rate-limit-*.tgz ]]; then
  echo "npm pack made $tarball, not nest-rate-limit-<version>.tgz"
  exit 1
fi
listing=$(tar tzf "$scratch/$tarball")
for file in package/dist/index.js package/dist/index.d.ts package/dist/algorithms/decide.lua \
  package/dist/testing/index.js package/dist/testing/index.d.ts \
  package/dist/console/index.js package/dist/console/index.d.ts package/dist/activity/activity.lua; do
  if ! grep -qx "$file" <<<"$listing"; then
    echo "$tarball lacks $file"
    exit 1
  fi
done
# No source maps: they would point at lib/*.ts, which is not shipped.
if grep -q '\.map$' <<<"$listing"; then
  echo "$tarball holds source maps whose sources it does not ship:"
  grep '\.map$' <<<"$listing" | head -5
  exit 1
fi
echo "Packed $tarball: $(wc -l <<<"$listing") files"

# Installs .ci/apps/NAME with the tarball, starts ENTRY with the extra environment given, and runs
# the sample's smoke check against it. Fails early, with the app's log, if the app dies first.
run_app() {
  local name=$1 entry=$2
  shift 2
  local dir="$scratch/$name"
  mkdir -p "$dir"
  cp ".ci/apps/$name/$entry" "$dir/"
  sed "s|@TARBALL@|file:../$tarball|" ".ci/apps/$name/package.json" >"$dir/package.json"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error)
  node -e "for (const p of ['@nestjs/core', 'nest-rate-limit', 'ioredis', 'redis']) { try { console.log('$name:', p, require('$dir/node_modules/' + p + '/package.json').version) } catch {} }"

  local port log="$dir/app.log"
  port=$(free_port)
  # --trace-require-module prints the require(esm) of the package: proof of how it was loaded.
  (cd "$dir" && env "$@" PORT="$port" NO_COLOR=1 setsid node --trace-require-module=all "$entry") >"$log" 2>&1 &
  local app_pid=$!
  pids+=("$app_pid")
  node .ci/smoke-sample.mjs "http://127.0.0.1:$port" &
  local check_pid=$!
  while kill -0 "$check_pid" 2>/dev/null; do
    if ! kill -0 "$app_pid" 2>/dev/null; then
      kill "$check_pid" 2>/dev/null || true
      echo "the $name app exited before answering:"
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
}

echo "Nest 11 CommonJS app, memory store"
run_app nest11-cjs main.cjs

# Every entry's types, as a TypeScript app finds them in the installed tarball under each module
# resolution Nest apps use: the classic CommonJS one (which reads typesVersions, not exports),
# nodenext, and a bundler's.
entries="$scratch/nest11-cjs/entries.ts"
cat >"$entries" <<'TS'
import { RateLimitModule } from 'nest-rate-limit';
import { TestClock } from 'nest-rate-limit/testing';
import { RateLimitConsoleModule } from 'nest-rate-limit/console';
export const entries = [RateLimitModule, TestClock, RateLimitConsoleModule];
TS
tsc="$PWD/node_modules/.bin/tsc"
for flags in '--module commonjs' '--module nodenext' '--module preserve --moduleResolution bundler'; do
  # shellcheck disable=SC2086
  if ! (cd "$scratch/nest11-cjs" && "$tsc" --noEmit --strict --skipLibCheck \
    --experimentalDecorators --target es2022 $flags entries.ts); then
    echo "the entries' types do not resolve with $flags"
    exit 1
  fi
done
echo "Every entry's types resolve under classic CommonJS, nodenext and bundler resolution"

echo "Nest 12 ESM app, node-redis client on a private redis-server"
redis_port=$(free_port)
setsid redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no >"$scratch/redis.log" 2>&1 &
pids+=("$!")
for _ in $(seq 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
run_app nest12-esm main.mjs REDIS_URL="redis://127.0.0.1:$redis_port"
keys=$(redis-cli -p "$redis_port" --scan --pattern 'smoke-*')
if [[ -z $keys ]]; then
  echo "the Nest 12 app answered, but left no key in Redis: its limits were not shared"
  exit 1
fi
echo "Keys in Redis: $keys"

echo "The README's quick start, copied into a Nest 12 app: Redis killed under traffic, and boot without Redis"
node .ci/readme-app.mjs "$scratch" "$tarball"
