# SPDX-License-Identifier: MIT
# Helpers for tests that move data over real SoftRoCE inside the guest
# (tests/vm/run.sh). Outside the guest every test skips with the reason.
load '../lib/common'

FOREIGN_CLIENT=${FOREIGN_CLIENT:-$BUILD_DIR/tests/rxe/foreign_client}
LIST_BURST=${LIST_BURST:-$BUILD_DIR/tests/rxe/list_burst}
MIG_CTL=${MIG_CTL:-$BUILD_DIR/tests/rxe/mig_ctl}
ADDR=${RDMACTL_VM_ADDR:-198.18.0.1}

need_guest() {
	[ -n "${RDMACTL_VM:-}" ] || skip "needs the SoftRoCE guest (tests/vm/run.sh)"
}

need_two_nics() {
	need_guest
	[ -n "${RDMACTL_VM_ADDR_A:-}" ] || skip "needs two rxe devices (tests/vm/run.sh --two-nics)"
}

need_four_nics() {
	need_two_nics
	[ -n "${RDMACTL_VM_ADDR_C:-}" ] || skip "needs four rxe devices (tests/vm/run.sh --four-nics)"
}

# heavy_sibling: skip on the sanitizer tier (tests/rxe/sanitized.sh) a test
# whose code path a lighter test of the same file already runs there; the
# plain rxe tier runs it. Keeps the whole suite near its 30-minute goal.
# Each such test is listed for rxe-asan in tests/expected-skips.
heavy_sibling() {
	[[ -z "${RDMACTL_SANITIZER_DIR:-}" ]] ||
		skip "heavy sibling: the plain rxe tier runs it, the sanitizer tier runs the lighter tests of its path ($1)"
}

# A fresh port per server, so that tests never meet an earlier server.
next_port() {
	PORT_SEQ=$(( ${PORT_SEQ:-0} + 1 ))
	echo $(( 18000 + (BATS_TEST_NUMBER * 20) + PORT_SEQ ))
}

# start_server NREGIONS ARGS...: run `rdmactl -j register ARGS` in the
# background; wait (bounded) until it printed NREGIONS descriptors.
# Sets SERVER_PID and SERVER_OUT (its stdout: one JSON line per event).
start_server() {
	local n=$1 i
	shift
	SERVER_OUT=$BATS_TEST_TMPDIR/server.$RANDOM.out
	"$RDMACTL" -j register "$@" >"$SERVER_OUT" 2>"$SERVER_OUT.err" 3>&- &
	SERVER_PID=$!
	for ((i = 0; i < 200; i++)); do
		if [ "$(grep -c '"event":"region"' "$SERVER_OUT" 2>/dev/null)" -ge "$n" ]; then
			return 0
		fi
		if ! kill -0 "$SERVER_PID" 2>/dev/null; then
			echo "server exited early:" >&2
			cat "$SERVER_OUT.err" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "server did not print $n descriptors within 20 s" >&2
	cat "$SERVER_OUT.err" >&2
	return 1
}

# wait_events EVENT N FILE [TENTHS]: wait, at most TENTHS tenths of a second
# (default 300), until FILE holds N or more JSON lines of "event":"EVENT".
# Fails when it does not by then.
wait_events() {
	local i n
	for ((i = 0; ; i++)); do
		n=$(grep -c "\"event\":\"$1\"" "$3" 2>/dev/null) || true # none yet: grep fails
		((${n:-0} >= $2)) && return 0
		((i < ${4:-300})) || return 1
		sleep 0.1
	done
}

# The descriptor of region NAME as one JSON object.
descriptor() {
	jq -c --arg n "$1" 'select(.event == "region" and .name == $n)' "$SERVER_OUT"
}

# stop_server [SIGNAL]: signal the server, wait for it (bounded), and leave
# its exit status in SERVER_RC.
stop_server() {
	local sig=${1:-TERM} i
	[ -n "${SERVER_PID:-}" ] || return 0
	kill -"$sig" "$SERVER_PID" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -KILL "$SERVER_PID" 2>/dev/null || true
	fi
	SERVER_RC=0
	wait "$SERVER_PID" || SERVER_RC=$?
	SERVER_PID=
}

# Servers end with SIGTERM, as in production, so that a leak surfaces
# (common_teardown, tests/lib/teardown.bash: what the test passed to
# `started`, the server, etcd, then the sanitizer reports).
teardown() {
	common_teardown
}

# group_peers BASE N [ADDR...]: a peers file $PEERS for N ranks of a group
# (alltoall, multicast): rank i on address i * count / N, ports from BASE,
# apart for each test and each call in it.
group_peers() {
	local base=$1 n=$2 i
	shift 2
	local addrs=("${@:-$ADDR}")
	base=$((base + BATS_TEST_NUMBER * 100 + ${PORT_SEQ:-0} * 10))
	PORT_SEQ=$(( ${PORT_SEQ:-0} + 1 ))
	PEERS=$BATS_TEST_TMPDIR/peers.$PORT_SEQ
	: >"$PEERS"
	for ((i = 0; i < n; i++)); do
		echo "$i ${addrs[i * ${#addrs[@]} / n]}:$((base + i))" >>"$PEERS"
	done
}

# counter_of DEV COUNTER: a hardware counter of DEV's port 1 (rxe: sent_pkts,
# rcvd_pkts, ...).
counter_of() { cat "/sys/class/infiniband/$1/ports/1/hw_counters/$2"; }

# wait_sent DEV PKTS SECS: until DEV has sent PKTS more packets than when
# called (data moving: a group's ranks all joined and exchanging), at most
# SECS seconds; fails naming what it saw.
wait_sent() {
	local base i
	base=$(counter_of "$1" sent_pkts)
	for ((i = 0; i < $3 * 10; i++)); do
		(($(counter_of "$1" sent_pkts) >= base + $2)) && return 0
		sleep 0.1
	done
	fail "$1 sent $(($(counter_of "$1" sent_pkts) - base)) packets in $3 s, not $2"
}

# rail_trees: the guest's devices as two hosts' rail plans, for --rails:
# its sysfs captured once a file (probe-topology --capture, TREE_ALL), and
# two copies, TREE_AC with only rxe_a and rxe_c (the client's host) and
# TREE_BD with only rxe_b and rxe_d (the server's); each gives a plan of
# two rails. Skips where the guest's plan is not its rxe devices.
rail_trees() {
	local d n
	TREE_ALL=$BATS_FILE_TMPDIR/tree TREE_AC=$BATS_FILE_TMPDIR/tree-ac TREE_BD=$BATS_FILE_TMPDIR/tree-bd
	if [[ ! -d $TREE_BD ]]; then
		rm -rf -- "$TREE_ALL" "$TREE_AC" "$TREE_BD"
		"$RDMACTL" probe-topology --capture "$TREE_ALL" >/dev/null
		cp -a -- "$TREE_ALL" "$TREE_AC"
		cp -a -- "$TREE_ALL" "$TREE_BD"
		for d in "$TREE_ALL"/class/infiniband/*; do
			d=${d##*/}
			case $d in "$RDMACTL_VM_DEV_A" | "$RDMACTL_VM_DEV_C") ;; *) rm -rf -- "$TREE_AC/class/infiniband/$d" ;; esac
			case $d in "$RDMACTL_VM_DEV_B" | "$RDMACTL_VM_DEV_D") ;; *) rm -rf -- "$TREE_BD/class/infiniband/$d" ;; esac
		done
	fi
	# the guest's own plan: its node's rxe devices with an active port, all
	# of them; the write says it and then fails to connect to a documentation
	# address at once (-t 1: the plan is all it is asked for), once a file
	if [[ ! -f $BATS_FILE_TMPDIR/tree-rails ]]; then
		RDMACTL_SYSFS=$TREE_ALL "$RDMACTL" -t 1 write --rails auto --pattern zero --size 4K 192.0.2.1/kv 2>&1 |
			sed -n 's/.*(\([0-9]*\) rails\{0,1\})$/\1/p' >"$BATS_FILE_TMPDIR/tree-rails"
	fi
	n=$(<"$BATS_FILE_TMPDIR/tree-rails")
	[[ $n -ge 4 ]] || skip "the guest's rail plan has $n rails, not its rxe devices (four and more)"
}

# ranks_wait: wait for every rank a group test started (PIDS); RCS holds
# their exit codes, DOC rank 0's standard output (rank.0.out).
ranks_wait() {
	local p
	RCS=()
	for p in "${PIDS[@]}"; do
		if wait "$p"; then RCS+=(0); else RCS+=($?); fi
	done
	PIDS=()
	DOC=$(cat "$BATS_TEST_TMPDIR/rank.0.out")
}

# ranks_dump: every rank's output and errors, for a test that fails.
ranks_dump() {
	local f
	for f in "$BATS_TEST_TMPDIR"/rank.*; do
		echo "== ${f##*/}"
		cat "$f"
	done
}

# all_exit CODE: every rank exited CODE.
all_exit() {
	local i
	for i in "${!RCS[@]}"; do
		[ "${RCS[i]}" = "$1" ] || { ranks_dump; fail "rank $i exited ${RCS[i]}, not $1"; }
	done
}

# A second address on each end of the veth pair, for two ranks a device:
# EXTRA_A on va (rxe_a), EXTRA_B on vb (rxe_b). extra_addrs adds them and
# waits (5 s at most) for their GIDs on the rxe ports; extra_addrs_del
# takes them away.
EXTRA_A=198.18.1.3
EXTRA_B=198.18.1.4
extra_addrs() {
	local i
	ip addr add "$EXTRA_A/24" dev va 2>/dev/null || true
	ip addr add "$EXTRA_B/24" dev vb 2>/dev/null || true
	for i in $(seq 50); do
		grep -qs "0000:0000:0000:0000:0000:ffff:c612:0103" /sys/class/infiniband/"$RDMACTL_VM_DEV_A"/ports/1/gids/* &&
			grep -qs "0000:0000:0000:0000:0000:ffff:c612:0104" /sys/class/infiniband/"$RDMACTL_VM_DEV_B"/ports/1/gids/* &&
			return 0
		sleep 0.1
	done
}
extra_addrs_del() {
	ip addr del "$EXTRA_A/24" dev va 2>/dev/null || true
	ip addr del "$EXTRA_B/24" dev vb 2>/dev/null || true
}
