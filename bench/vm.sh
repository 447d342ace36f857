#!/usr/bin/env bash
# bench/vm.sh [LINES] [BOOTS] : the job as a VM image against the same job as plain processes.
# Builds the image (hummer image build), then, in a network namespace of its own with a bridge
# and a tap device (needs root and iproute2; the namespace, and whatever runs in it, goes when the
# script ends), with the JobManager, the VM and every client in that namespace:
# - image size, and boot-to-ready (qemu launched -> "registered with the JobManager") over
#   BOOTS boots of a TaskManager VM (default 5);
# - WordCount over LINES generated lines (default 200,000) at parallelism 2 on one TaskManager
#   with 2 slots: in a VM with 2 vCPUs, then as a plain process, same static binary, same
#   JobManager; prints both wall times and the ratio;
# - per-record latency (hummer run latency, 20,000 records/s for 5 s, parallelism 2) on the same
#   TaskManager, in the VM and as a plain process (generator and reduce share one worker, so
#   one clock).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cargo build -q --manifest-path "$here/Cargo.toml" --bin hummer
hummer=${CARGO_TARGET_DIR:-$here/target}/debug/hummer
img=/var/tmp/hummer-bench-image
"$hummer" image build -o "$img" | tail -1
lines=${1:-200000}; boots=${2:-5}
ns=hmrbench$$; br=br0; tap=tap0; sub=10.81.0
inns() { ip netns exec "$ns" "$@"; }
cleanup() {
  # Everything started in the namespace (the JobManager, the TaskManager, qemu) ends with it.
  for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
  ip netns del "$ns" 2>/dev/null || true
  rm -f "${log:-}"
}
trap cleanup EXIT; trap "exit 1" INT TERM
ip netns add "$ns"; ip -n "$ns" link set lo up
ip -n "$ns" link add "$br" type bridge; ip -n "$ns" addr add "$sub.1/24" dev "$br"
ip -n "$ns" link set "$br" up
ip -n "$ns" tuntap add "$tap" mode tap; ip -n "$ns" link set "$tap" master "$br"
ip -n "$ns" link set "$tap" up
inns "$hummer" jobmanager --insecure --rpc "$sub.1:6123" --rest "$sub.1:8081" >/dev/null 2>&1 &
sleep 0.5
export HUMMER_JOBMANAGER=$sub.1:6123
log=$(mktemp)
boot() { # boot [VCPUS]: starts a TaskManager VM, waits until it registered, prints seconds
  : > "$log"
  local start=$(date +%s.%N)
  inns "$hummer" image run "$img" --role taskmanager --net tap --tap "$tap" --ip "$sub.11/24" \
    --jobmanager "$sub.1:6123" --slots 2 --cpus "${1:-1}" --memory 1024 > "$log" 2>&1 &
  until grep -q "registered with\|powering off\|error" "$log"; do sleep 0.01; done
  grep -q "registered with" "$log" || { cat "$log" >&2; exit 1; }
  echo "$(date +%s.%N) - $start" | bc
}
stop_vm() { # kills the namespace's qemu (its "hummer image run" then ends)
  for pid in $(ip netns pids "$ns"); do
    if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = qemu-system-x86 ]; then kill "$pid" || true; fi
  done
  sleep 1
}
times=()
for i in $(seq "$boots"); do
  t=$(boot); times+=("$t"); echo "boot $i: launch to registered $t s"; stop_vm
  # The JobManager forgets the stopped VM's TaskManager after its heartbeat timeout.
  sleep 5
done
echo "boot-to-ready: ${times[*]} s"
wc() { inns /usr/bin/time -f "%e" "$img/hummer" wordcount --corpus-lines "$lines" --parallelism 2 --top 0 2>&1 >/dev/null | tail -1; }
lat() { inns "$img/hummer" run latency --rate 20000 --seconds 5 --parallelism 2 | tail -1; }
boot 2 >/dev/null
vm_s=$(wc); echo "WordCount $lines lines in a 2-vCPU VM (TCG): $vm_s s"
echo "in the VM: $(lat)"
stop_vm; sleep 5
inns "$img/hummer" taskmanager --insecure --jobmanager "$sub.1:6123" --slots 2 --data-addr "$sub.1" >/dev/null 2>&1 &
sleep 1
proc_s=$(wc); echo "WordCount $lines lines as a plain process: $proc_s s"
echo "as a process: $(lat)"
echo "VM / process wall time: $(echo "scale=1; $vm_s / $proc_s" | bc)x"
