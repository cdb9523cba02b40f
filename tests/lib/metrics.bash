# SPDX-License-Identifier: MIT
# The --metrics files, read by a real parser: promtool check metrics (from
# Debian's prometheus package, tests/deps.sh) with its lint, and the
# OpenMetrics end line, which promtool reads as a comment.

require_promtool() {
	command -v promtool >/dev/null ||
		skip "promtool is not installed (apt-get install prometheus, as tests/deps.sh does)"
}

# metrics_check FILE: promtool accepts it, lint included, and it ends with
# the line "# EOF". Fails naming what is wrong (also under `run`).
metrics_check() {
	local out
	if [[ ! -f $1 ]]; then
		fail "no metrics file $1"
		return 1
	fi
	if ! out=$(promtool check metrics <"$1" 2>&1); then
		fail "promtool refuses $1: $out"$'\n'"$(cat "$1")"
		return 1
	fi
	if [[ $(tail -n 1 "$1") != "# EOF" ]]; then
		fail "$1 does not end with '# EOF'"
		return 1
	fi
}

# metrics_value FILE NAME [TEXT]: the value of NAME's first sample whose
# line holds TEXT (a label, say 'mode="latency"'); empty when none.
metrics_value() {
	awk -v n="$2" -v t="${3:-}" '(index($0, n "{") == 1 || index($0, n " ") == 1) && index($0, t) {
		print $NF; exit }' "$1"
}
