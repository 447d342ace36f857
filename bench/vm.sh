#!/usr/bin/env bash
# bench/vm.sh [LINES] [BOOTS] : the job as a VM image against the same job as plain processes.
# Builds the image (hummer image build), then on a host bridge with tap devices (needs root):
# - image size, and boot-to-ready (qemu launched -> "registered with the JobManager") over
#   BOOTS boots of a TaskManager VM (default 5);
# - WordCount over LINES generated lines (default 200,000) at parallelism 2 on one TaskManager
#   with 2 slots: in a VM with 2 vCPUs, then as a plain process, same static binary, same
#   JobManager on the host; prints both wall times and the ratio;
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
br=hbvm$$; tap=htvm$$; sub=10.81.$(( $$ % 250 ))
cleanup() {
  pkill -f "jobmanager --rpc $sub.1" 2>/dev/null || true
  pkill -f "taskmanager --jobmanager $sub.1" 2>/dev/null || true
  pkill -f "ifname=$tap" 2>/dev/null || true
  ip link del "$tap" 2>/dev/null || true; ip link del "$br" 2>/dev/null || true
}
trap cleanup EXIT
ip link add "$br" type bridge; ip addr add "$sub.1/24" dev "$br"; ip link set "$br" up
ip tuntap add "$tap" mode tap; ip link set "$tap" master "$br"; ip link set "$tap" up
"$hummer" jobmanager --rpc "$sub.1:6123" --rest "$sub.1:8081" >/dev/null 2>&1 &
sleep 0.5
export HUMMER_JOBMANAGER=$sub.1:6123
log=$(mktemp)
boot() { # boot [VCPUS]: starts a TaskManager VM, waits until it registered, prints seconds
  : > "$log"
  local start=$(date +%s.%N)
  "$hummer" image run "$img" --role taskmanager --net tap --tap "$tap" --ip "$sub.11/24" \
    --jobmanager "$sub.1:6123" --slots 2 --cpus "${1:-1}" --memory 1024 > "$log" 2>&1 &
  until grep -q "registered with\|powering off\|error" "$log"; do sleep 0.01; done
  grep -q "registered with" "$log" || { cat "$log" >&2; exit 1; }
  echo "$(date +%s.%N) - $start" | bc
}
stop_vm() { pkill -f "ifname=$tap" || true; sleep 1; }
times=()
for i in $(seq "$boots"); do
  t=$(boot); times+=("$t"); echo "boot $i: launch to registered $t s"; stop_vm
  # The JobManager forgets the stopped VM's TaskManager after its heartbeat timeout.
  sleep 5
done
echo "boot-to-ready: ${times[*]} s"
wc() { /usr/bin/time -f "%e" "$img/hummer" wordcount --corpus-lines "$lines" --parallelism 2 --top 0 2>&1 >/dev/null | tail -1; }
lat() { "$img/hummer" run latency --rate 20000 --seconds 5 --parallelism 2 | tail -1; }
boot 2 >/dev/null
vm_s=$(wc); echo "WordCount $lines lines in a 2-vCPU VM (TCG): $vm_s s"
echo "in the VM: $(lat)"
stop_vm; sleep 5
"$img/hummer" taskmanager --jobmanager "$sub.1:6123" --slots 2 --data-addr "$sub.1" >/dev/null 2>&1 &
sleep 1
proc_s=$(wc); echo "WordCount $lines lines as a plain process: $proc_s s"
echo "as a process: $(lat)"
echo "VM / process wall time: $(echo "scale=1; $vm_s / $proc_s" | bc)x"
