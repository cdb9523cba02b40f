# SPDX-License-Identifier: MIT
# Shared by the example scripts (sourced): one bounded rdmactl call whose
# JSON document is printed, or whose own error message ends the run.
# The sourcing script defines $rdmactl, $step (seconds), $work and die().

# j ARGS...: one `rdmactl -j ARGS`, bounded by $step seconds.
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
