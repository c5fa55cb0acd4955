#!/usr/bin/env bash
# Starts a three-node NATS JetStream cluster and two Orbit engines on it,
# locally, and runs a fan-out whose items both engines share. Everything
# lives in .demo-cluster/ and is stopped on exit. CLUSTER_PORT (default
# 14222) is the first client port: the nodes use it and the next two, and
# their routes the same ports + 2000.
set -euo pipefail
cd "$(dirname "$0")/.."
orbit=${ORBIT:-bin/orbit}
nats_server=${NATS_SERVER:-bin/nats-server}
demo=$PWD/.demo-cluster
port=${CLUSTER_PORT:-14222}

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

rm -rf "$demo" && mkdir -p "$demo/a" "$demo/b"
"$orbit" --root "$demo/a" init >/dev/null
"$orbit" --root "$demo/b" init >/dev/null

# Both engines are the same project's: the same identities and log key.
auth=$("$orbit" --root "$demo/a" nats-config)
rm -rf "$demo/b/.orbit/state/creds" && mkdir -p "$demo/b/.orbit/state"
cp -r "$demo/a/.orbit/state/creds" "$demo/b/.orbit/state/creds"

urls=""
routes=""
for i in 0 1 2; do
  urls+="${urls:+,}nats://127.0.0.1:$((port + i))"
  routes+="${routes:+, }nats-route://127.0.0.1:$((port + 2000 + i))"
done
for i in 0 1 2; do
  cat > "$demo/n$i.conf" <<CONF
server_name: n$i
listen: 127.0.0.1:$((port + i))
max_payload: 24MB
jetstream { store_dir: "$demo/n$i", sync_interval: always }
cluster { name: orbit-demo, listen: 127.0.0.1:$((port + 2000 + i)), routes: [$routes] }
$auth
CONF
  "$nats_server" -c "$demo/n$i.conf" >"$demo/n$i.log" 2>&1 &
  pids+=($!)
done
# Engines start once the cluster has elected its JetStream meta leader.
for _ in $(seq 1 100); do
  grep -qi "metadata leader" "$demo"/n*.log && break
  sleep 0.2
done
grep -qi "metadata leader" "$demo"/n*.log || { tail "$demo"/n*.log; exit 1; }
echo "== a three-node cluster at $urls"

export ORBIT_NATS_URL=$urls ORBIT_LOG_KEY=$demo/log.key
for e in a b; do
  "$orbit" --root "$demo/$e" serve >"$demo/engine-$e.log" 2>&1 &
  pids+=($!)
  echo "== engine $e: pid $!"
  for _ in $(seq 1 100); do grep -q "engine running" "$demo/engine-$e.log" && break; sleep 0.2; done
  grep -q "engine running" "$demo/engine-$e.log" || { cat "$demo/engine-$e.log"; exit 1; }
  head -n 2 "$demo/engine-$e.log" | grep "serving" || true
done

mkdir -p "$demo/a/.orbit/jobs"
cat > "$demo/a/.orbit/jobs/spread.yaml" <<'JOB'
schemaVersion: 2
kind: Job
metadata: {name: spread}
spec:
  steps:
    - id: items
      fan_out:
        items: "a b c d e f g h i j k l m n o p"
        max_workers: 8
        worker:
          id: work
          spec:
            type: shell
            program: sh
            args: ["-c", "sleep 1; printf '%s by engine pid %s' $1 $PPID", "sh", "{{ item }}"]
            allowed_programs: [sh]
      fan_in: {join: {mode: all}, collect: done}
JOB
echo "== orbit job run spread"
run=$("$orbit" --root "$demo/a" job run spread | tail -n 1 | awk '{print $2}')
echo "== items per engine pid"
done=$("$orbit" --root "$demo/a" run show --json "$run" | grep -o '[a-p] by engine pid [0-9]*' | sort -u)
echo "$done" | awk '{print "engine pid " $NF}' | sort | uniq -c
items=$(echo "$done" | grep -c .)
engines=$(echo "$done" | awk '{print $NF}' | sort -u | grep -c .)
if [ "$items" -ne 16 ] || [ "$engines" -ne 2 ]; then
  echo "cluster-demo: $items of 16 items done, by $engines engine(s); both engines should have run some" >&2
  exit 1
fi
