# SPDX-License-Identifier: MIT
# Shared by the example scripts (sourced). The sourcing script sets $here
# (its folder) and defines usage_err() and die(); j() also uses $step
# (seconds) and $work.

# rdmactl: $RDMACTL, else this checkout's build, else the one on PATH.
if [[ -n "${RDMACTL:-}" ]]; then
	rdmactl=$RDMACTL
elif [[ -x "$here/../build/cli/rdmactl" ]]; then
	rdmactl=$here/../build/cli/rdmactl
else
	rdmactl=$(command -v rdmactl) || usage_err "no rdmactl: build it (cmake --build build) or set RDMACTL"
fi

# j ARGS...: one `rdmactl -j ARGS`, bounded by $step seconds; prints its
# JSON document, or ends the run with rdmactl's own error message.
j() {
	local out rc=0 msg
	out=$(timeout --kill-after=5 "$step" "$rdmactl" -j -t $((step * 1000 / 3)) "$@" \
		2>"$work/last.err") || rc=$?
	if ((rc == 0)); then
		printf '%s\n' "$out"
		return 0
	fi
	msg=$(jq -r '(if type == "array" then map(.output.error.message // empty)[0] else .error.message end) // empty' \
		<<<"$out" 2>/dev/null) || msg=
	((rc != 124 && rc != 137)) || msg="no answer within $step s"
	die "rdmactl $1 ${2:-}: ${msg:-exit $rc: $(tail -n 3 "$work/last.err")}"
}

# stop_pid PID SECONDS: TERM, wait at most SECONDS, then KILL; the exit
# status lands in REAPED.
stop_pid() {
	local pid=$1 end=$((SECONDS + $2))
	kill -TERM "$pid" 2>/dev/null || true
	while kill -0 "$pid" 2>/dev/null && ((SECONDS < end)); do sleep 0.1; done
	kill -KILL "$pid" 2>/dev/null || true
	REAPED=0
	wait "$pid" 2>/dev/null || REAPED=$?
}
