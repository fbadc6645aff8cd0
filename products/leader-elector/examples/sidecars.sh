#!/usr/bin/env bash
# The sidecar, runnable: two `leader-elector serve` processes (as two Pods'
# sidecars would run) on the bundled API emulator, each asked who leads over
# HTTP as an app in any language would ask it. The leader is killed (SIGKILL: a
# crash, no release) and the other leads a lease later; then it is stopped
# gracefully (SIGTERM: it releases the Lease). Exits 0 when both happened.
#
# From the repository root: bash products/leader-elector/examples/sidecars.sh
# (`--build-only`: builds the two binaries it runs, and stops there).
set -euo pipefail
cd "$(dirname "$0")/../../.."
# Those two binaries only (the package's kubectl plugin is not needed here).
cargo build -q -p leader-elector --bin leader-elector -p kube-emulator --bin kube-emulator
[ "${1:-}" = --build-only ] && exit 0
bin=${CARGO_TARGET_DIR:-target}/debug
dir=$(mktemp -d)
pids=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

"$bin/kube-emulator" --port 0 --kubeconfig "$dir/kubeconfig" >"$dir/emulator.log" &
pids+=($!)
for _ in $(seq 100); do [ -s "$dir/kubeconfig" ] && break; sleep 0.1; done
[ -s "$dir/kubeconfig" ] || { echo "the emulator did not start" >&2; exit 1; }

base=$((20000 + RANDOM % 20000))
declare -A port pid
for name in alpha bravo; do
  port[$name]=$base
  base=$((base + 1))
  # client-go's flags, at test speed: a 2 s lease.
  "$bin/leader-elector" --kubeconfig "$dir/kubeconfig" --identity "$name" \
    --lease-duration 2s --renew-deadline 1500ms --retry-period 250ms \
    serve --lease demo --addr "127.0.0.1:${port[$name]}" 2>"$dir/$name.log" &
  pid[$name]=$!
  pids+=($!)
done

# What an app does: GET / on its own sidecar, {"name": "<holder>"}.
holder() { curl -sf "127.0.0.1:${port[$1]}/" | sed -n 's/.*"name":"\([^"]*\)".*/\1/p'; }
wait_for() { # sidecar, holder wanted, seconds
  for _ in $(seq $(($3 * 10))); do
    [ "$(holder "$1" 2>/dev/null)" = "$2" ] && return 0
    sleep 0.1
  done
  return 1
}

leader=""
for _ in $(seq 100); do
  leader=$(holder alpha 2>/dev/null || true)
  [ -n "$leader" ] && break
  sleep 0.1
done
[ -n "$leader" ] || { echo "no leader elected" >&2; exit 1; }
other=$([ "$leader" = alpha ] && echo bravo || echo alpha)
wait_for "$other" "$leader" 5 || { echo "$other does not see $leader lead" >&2; exit 1; }
echo "$leader leads; $other's sidecar says so too"

echo "crashing $leader (SIGKILL: no release)"
kill -9 "${pid[$leader]}"
wait "${pid[$leader]}" 2>/dev/null || true
crashed=$(date +%s%N)
wait_for "$other" "$other" 10 || { echo "$other did not take over" >&2; exit 1; }
echo "$other leads, $((($(date +%s%N) - crashed) / 1000000)) ms after the crash (a 2 s lease)"

echo "stopping $other (SIGTERM: it releases the Lease)"
kill -TERM "${pid[$other]}"
if wait "${pid[$other]}"; then
  echo "$other exited 0 after releasing"
else
  echo "$other exited with an error" >&2
  exit 1
fi
grep -h "stopped leading" "$dir/$other.log" | sed 's/^/  /'
