#!/usr/bin/env bash
# make demo: a whole CCM Fleet on one machine. Starts an embedded broker and
# six simulated agents, changes a file on the Debian half of the fleet, shows
# that a second run is stable, tampers with one host and finds exactly that
# drift with a noop run, assigns a watched file to the web hosts, tampers
# with it and watches the agent repair it, shows ccm-orch status, serves the
# dashboard until Ctrl-C (DEMO_NO_UI=1: no dashboard; DEMO_NO_WAIT=1 or no
# terminal: do not wait), then cleans up. It says so first, and prints every
# command it runs, quoted so it can be pasted (printf %q), before running
# it; headings are bold only when stdout is a terminal.
#
# The broker and the dashboard listen on free loopback ports unless
# DEMO_PORT or DEMO_UI_PORT names one; a port that is taken ends the demo at
# once with the program's own error. Everything the demo writes lives in one
# directory from mktemp (under $TMPDIR), removed on exit, and every process
# it started is stopped on exit and on Ctrl-C.
set -uo pipefail

BIN=${BIN:-bin}
# START_TIMEOUT_TENTHS bounds each wait for a process to come up, in tenths
# of a second; a process that exits ends the wait at once.
START_TIMEOUT_TENTHS=300
OWNER=$(id -un)
GROUP=$(id -gn)

if [ -t 1 ]; then
	BOLD=$'\033[1m' PLAIN=$'\033[0m'
else
	BOLD= PLAIN=
fi
say() { printf '\n%s== %s%s\n' "$BOLD" "$*" "$PLAIN"; }
# show CMD...: prints the command as it is run, each word quoted for the
# shell (printf %q), so it can be pasted.
show() {
	printf '$'
	printf ' %q' "$@"
	printf '\n'
}
# show_bg LOG CMD...: shows a command run in the background, output to LOG.
show_bg() {
	local log=$1
	shift
	printf '$'
	printf ' %q' "$@"
	printf ' >%q 2>&1 &\n' "$log"
}
run() { show "$@"; "$@"; }
fail() { printf '\ndemo failed: %s\n' "$*" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ccm-demo.XXXXXX") || fail "cannot make a temporary directory"
DEMO_DIR="$WORK/hosts"
mkdir "$DEMO_DIR" || fail "cannot make $DEMO_DIR"

pids=()
ready_line=
cleanup() {
	trap - EXIT INT TERM
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# started NAME PID LOG PATTERN: waits until LOG has a line matching PATTERN
# and sets ready_line to it; when the process exits first (a port that is taken,
# say), prints its log to stderr and fails with its exit status.
started() {
	local name=$1 pid=$2 log=$3 pattern=$4 line rc
	for _ in $(seq 1 "$START_TIMEOUT_TENTHS"); do
		line=$(grep -m1 -e "$pattern" "$log" 2>/dev/null) && { ready_line=$line; return 0; }
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid"
			rc=$?
			cat "$log" >&2
			fail "$name exited with status $rc before it was ready"
		fi
		sleep 0.1
	done
	cat "$log" >&2
	fail "$name was not ready after $((START_TIMEOUT_TENTHS / 10))s"
}

if [ -n "${DEMO_NO_UI:-}" ]; then
	printf 'This demo runs a whole fleet on this machine, then stops it and cleans up (DEMO_NO_UI is set: no dashboard).\n'
elif [ -t 0 ] && [ -z "${DEMO_NO_WAIT:-}" ]; then
	printf 'This demo runs a whole fleet on this machine and ends on its dashboard, served until you press Ctrl-C; then it stops everything and cleans up.\n'
else
	printf 'This demo runs a whole fleet on this machine, shows its dashboard address, then stops everything and cleans up (not waiting on the dashboard: stdin is not a terminal or DEMO_NO_WAIT is set).\n'
fi

say "Starting an embedded NATS broker (ccm-broker, JetStream on) on 127.0.0.1:${DEMO_PORT:-<a free port>}"
show_bg "$WORK/broker.log" "$BIN/ccm-broker" --listen "127.0.0.1:${DEMO_PORT:-0}" --store "$WORK/store"
"$BIN/ccm-broker" --listen "127.0.0.1:${DEMO_PORT:-0}" --store "$WORK/store" >"$WORK/broker.log" 2>&1 &
BROKER_PID=$!
pids+=("$BROKER_PID")
started ccm-broker "$BROKER_PID" "$WORK/broker.log" '^broker listening on nats://'
echo "$ready_line"
SERVER=${ready_line#broker listening on }
started ccm-broker "$BROKER_PID" "$WORK/broker.log" ' ready ('
echo "$ready_line"
export CCM_SERVER="$SERVER"
show export CCM_SERVER="$SERVER"

say "Making a signing key; the agents' policy trusts it for file resources only"
run "$BIN/ccm-orch" keys new demo --dir "$WORK" || fail "keys new"
cat >"$WORK/policy.yaml" <<POLICY
max_clock_skew: 30s
signers:
  - name: demo
    public_key: $(cat "$WORK/demo.pub")
    allow: [file]
POLICY
run cat "$WORK/policy.yaml"
export CCM_KEY="$WORK/demo.seed"   # every ccm-orch command below signs with it
show export CCM_KEY="$CCM_KEY"

say "Starting 6 simulated agents, each with its own connection: os=debian,rhel x role=web,db"
show_bg "$WORK/agents.log" "$BIN/ccm-agent" simulate --count 6 --vary os=debian,rhel --vary role=web,db \
	--policy "$WORK/policy.yaml" --state-dir "$WORK/agents"
"$BIN/ccm-agent" simulate --count 6 --vary os=debian,rhel --vary role=web,db \
	--policy "$WORK/policy.yaml" --state-dir "$WORK/agents" >"$WORK/agents.log" 2>&1 &
pids+=($!)

printf 'Waiting until 6 hosts answer, running every 0.1s:\n'
show "$BIN/ccm-orch" discover --json
for _ in $(seq 1 100); do
	n=$("$BIN/ccm-orch" discover --json 2>/dev/null | grep -c '"identity"')
	[ "${n:-0}" -ge 6 ] && break
	sleep 0.1
done
[ "${n:-0}" -ge 6 ] || { cat "$WORK/broker.log" "$WORK/agents.log"; fail "the agents did not come up"; }

say "Who is out there?"
run "$BIN/ccm-orch" discover || fail "discover"

say "Every host gets a directory of its own (paths are templated from facts)"
run "$BIN/ccm-orch" ensure file "$DEMO_DIR/{{ lookup('facts.identity') }}" directory \
	--owner "$OWNER" --group "$GROUP" --mode 0755 || fail "directories"

MOTD="$DEMO_DIR/{{ lookup('facts.identity') }}/motd"
CONTENT="managed by ccm on {{ lookup('facts.identity') }} ({{ lookup('facts.role') }})"

say "Manage /etc/motd-style files on the Debian hosts only"
run "$BIN/ccm-orch" ensure file "$MOTD" --content "$CONTENT" --owner "$OWNER" --group "$GROUP" --mode 0644 --where os=debian
rc=$?
[ $rc -eq 0 ] || fail "first ensure exited $rc"

say "The same again: nothing to do"
run "$BIN/ccm-orch" ensure file "$MOTD" --content "$CONTENT" --owner "$OWNER" --group "$GROUP" --mode 0644 --where os=debian
rc=$?
[ $rc -eq 0 ] || fail "second ensure exited $rc"

say "Someone edits sim-0003 by hand"
run sh -c "echo 'hacked' > $DEMO_DIR/sim-0003/motd"

say "Fleet noop audit: who drifted? (exit 5 means drift found)"
run "$BIN/ccm-orch" ensure file "$MOTD" --content "$CONTENT" --owner "$OWNER" --group "$GROUP" --mode 0644 --where os=debian --noop
rc=$?
[ $rc -eq 5 ] || fail "the noop run exited $rc, expected 5"

say "Repair it (the same ensure as before, without --noop), then audit again"
run "$BIN/ccm-orch" ensure file "$MOTD" --content "$CONTENT" --owner "$OWNER" --group "$GROUP" --mode 0644 --where os=debian || fail "repair"
run "$BIN/ccm-orch" ensure file "$MOTD" --content "$CONTENT" --owner "$OWNER" --group "$GROUP" --mode 0644 --where os=debian --noop
rc=$?
[ $rc -eq 0 ] || fail "the audit after repair exited $rc"

say "The policy does not allow exec: the agents refuse it (forbidden) and run nothing"
run "$BIN/ccm-orch" ensure exec "/bin/touch $DEMO_DIR/not-allowed" --where os=debian
rc=$?
[ $rc -eq 2 ] || fail "the forbidden exec exited $rc, expected 2"
[ ! -e "$DEMO_DIR/not-allowed" ] || fail "the forbidden exec ran"

say "Each agent's audit log has a line per request with the signer and the decision"
run tail -n 2 "$WORK/agents/sim-0001/audit.log"

say "An assignment: the web hosts keep a watched file on their own, with no more pushes"
cat >"$WORK/assigned.yaml" <<MANIFEST
ccm:
  resources:
    - file:
        - "$DEMO_DIR/{{ lookup('facts.identity') }}/assigned":
            content: "kept by the agent of {{ lookup('facts.identity') }}\n"
            owner: $OWNER
            group: $GROUP
            mode: "0644"
            watch: true
MANIFEST
run cat "$WORK/assigned.yaml"
run "$BIN/ccm-orch" assign web-files "$WORK/assigned.yaml" --where role=web --interval 10m --splay 1m || fail "assign"
printf 'Finding a web host:\n'
show "$BIN/ccm-orch" discover --where role=web --json
WEB=$("$BIN/ccm-orch" discover --where role=web --json 2>/dev/null | grep -o '"identity": *"[^"]*"' | head -1 | sed 's/.*"\([^"]*\)"$/\1/')
[ -n "$WEB" ] || fail "no web host found"
WATCHED="$DEMO_DIR/$WEB/assigned"
for _ in $(seq 1 100); do [ -s "$WATCHED" ] && break; sleep 0.1; done
[ -s "$WATCHED" ] || fail "the assignment did not reach $WEB"
run "$BIN/ccm-orch" assignments list

say "Someone edits $WEB's watched file: its agent repairs it by itself"
start=$(date +%s%N)
run sh -c "echo 'hacked' > $WATCHED"
for _ in $(seq 1 100); do grep -q '^kept by' "$WATCHED" 2>/dev/null && break; sleep 0.02; done
grep -q '^kept by' "$WATCHED" || fail "the watched file was not repaired"
echo "repaired after $(( ($(date +%s%N) - start) / 1000000 )) ms:"
run cat "$WATCHED"

say "Fleet status: each assignment on the hosts it selects (exit 0: converged)"
printf 'Waiting until it converges, running every 0.1s:\n'
show "$BIN/ccm-orch" status
for _ in $(seq 1 50); do "$BIN/ccm-orch" status >/dev/null 2>&1 && break; sleep 0.1; done
run "$BIN/ccm-orch" status
rc=$?
[ $rc -eq 0 ] || fail "status exited $rc"
if [ -z "${DEMO_NO_UI:-}" ]; then
	say "The fleet in a browser: a read-only dashboard of hosts, runs, drift and health"
	show_bg "$WORK/ui.log" "$BIN/ccm-orch" ui --listen "127.0.0.1:${DEMO_UI_PORT:-0}"
	"$BIN/ccm-orch" ui --listen "127.0.0.1:${DEMO_UI_PORT:-0}" >"$WORK/ui.log" 2>&1 &
	UI_PID=$!
	pids+=("$UI_PID")
	started "the dashboard (ccm-orch ui)" "$UI_PID" "$WORK/ui.log" '^CCM Fleet dashboard on '
	line=${ready_line#CCM Fleet dashboard on }
	printf 'Dashboard: %s\n' "${line%% *}"
	if [ -t 0 ] && [ -z "${DEMO_NO_WAIT:-}" ]; then
		printf 'Open it, run more ccm-orch commands against %s, then press Ctrl-C to stop the demo.\n' "$SERVER"
		interrupted=
		trap 'interrupted=1; printf "\n"' INT
		while [ -z "$interrupted" ] && kill -0 "$UI_PID" 2>/dev/null; do sleep 1; done
		trap 'exit 130' INT
	else
		printf '(not waiting: stdin is not a terminal or DEMO_NO_WAIT is set)\n'
	fi
fi

say "Done: stopping agents and broker, removing $WORK"
