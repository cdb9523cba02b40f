# SPDX-License-Identifier: MIT
# assert_lat_clocks TSC MONO N: two -j --lat reports of N samples each, the
# first timed by --lat-clock tsc, the second by --lat-clock monotonic (over
# verbs in tests/rxe/data.bats, over libfabric in tests/cli/ofi.bats). Each
# names its clock; the TSC's reading costs something, less than its fastest
# sample. Each against its run's own wall time: the samples, a reading's
# cost put back, fit inside it (a counter rate off by a thousandth too slow
# would not), and are not far below it (one off by half too fast).
assert_lat_clocks() {
	local run
	jq -e '.lat_clock == "monotonic" and .lat_clock_mhz == 1000 and .lat_left_out == 0' <<<"$2" ||
		fail "not a monotonic report: $2"
	jq -e '.lat_clock == "tsc" and .lat_clock_mhz > 100 and .lat_left_out < 30
		and .clock_us > 0 and .clock_us < .latency_us.min' <<<"$1" ||
		fail "not a TSC report: $1"
	for run in "$1" "$2"; do
		jq -e --argjson n "$3" '(.latency_us.avg + .clock_us) * ($n - .lat_left_out) <= .seconds * 1e6 * 1.001
			and .latency_us.avg * $n >= .seconds * 1e6 * 0.5' <<<"$run" ||
			fail "the samples do not fit the run's wall time: $run"
	done
}
