#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Help, usage errors, exit codes and JSON validity of the data commands,
# without a device: every bad input is refused before anything is posted.

load helpers

setup() {
	require_binary
}

# rdmactl_json ARGS...: run with -j; the output must be one JSON document.
rdmactl_json() {
	run timeout 20 "$RDMACTL" -j "$@"
	jq -e . <<<"$output" >/dev/null || fail "not one JSON document: $output"
}

@test "no command is a usage error; --help and help succeed" {
	run "$RDMACTL"
	assert_failure 2
	run "$RDMACTL" --help
	assert_success
	assert_output --partial "Commands:"
	run "$RDMACTL" help write
	assert_success
	assert_output --partial "Usage: rdmactl write"
}

@test "help wirte suggests as wirte does; --help COMMAND is that command's help" {
	run "$RDMACTL" help wirte
	assert_failure 2
	assert_output "rdmactl: unknown command 'wirte' (did you mean 'write'?)"
	run "$RDMACTL" wirte
	assert_failure 2
	assert_output "rdmactl: unknown command 'wirte' (did you mean 'write'?)"
	run "$RDMACTL" --help write
	assert_success
	assert_line --index 0 "Usage: rdmactl write [OPTIONS] TARGET"
	run "$RDMACTL" -h kvxfer plan
	assert_success
	assert_line --index 0 "Usage: rdmactl kvxfer plan [OPTIONS]"
	run "$RDMACTL" --help wirte
	assert_failure 2
	assert_output --partial "did you mean 'write'?"
}

@test "an unknown command is never a success, in text or JSON" {
	run "$RDMACTL" frobnicate
	assert_failure 2
	assert_output --partial "unknown command 'frobnicate'"
	rdmactl_json frobnicate
	assert_failure 2
	[ "$(jq -r .error.code <<<"$output")" = EINVAL ]
	[ "$(jq -r .schema_version <<<"$output")" = 2 ]
}

@test "every command's --help exits 0 and lists its options" {
	for c in register write read atomic probe-topology; do
		run "$RDMACTL" "$c" --help
		assert_success
		assert_output --partial "Usage: rdmactl $c"
	done
}

@test "a mistyped command or option: did you mean, exit 2" {
	run "$RDMACTL" wirte
	assert_failure 2
	assert_output "rdmactl: unknown command 'wirte' (did you mean 'write'?)"
	run "$RDMACTL" read --offst 0 h/r
	assert_failure 2
	assert_output "rdmactl: read: unknown option '--offst' (did you mean '--offset'?)"
	run "$RDMACTL" --jsn write
	assert_failure 2
	assert_output "rdmactl: unknown global option '--jsn' (did you mean '--json'?)"
	# nothing close: no guess, the help to read instead
	run "$RDMACTL" read --frobnicate h/r
	assert_failure 2
	assert_output "rdmactl: read: unknown option '--frobnicate' (see 'rdmactl read --help')"
	run "$RDMACTL" zzzzzz
	assert_failure 2
	assert_output "rdmactl: unknown command 'zzzzzz' (see 'rdmactl help')"
}

@test "a long option is its whole name: an abbreviation is refused, not taken" {
	run "$RDMACTL" read --siz 4K h/r
	assert_failure 2
	assert_output "rdmactl: read: unknown option '--siz' (did you mean '--size'?)"
	run "$RDMACTL" read --siz=4K h/r
	assert_failure 2
	assert_output "rdmactl: read: unknown option '--siz=4K' (did you mean '--size'?)"
	run "$RDMACTL" --time 5 version
	assert_failure 2
	assert_output "rdmactl: unknown global option '--time' (did you mean '--timeout'?)"
	# the whole name still works, with = or as two words
	run "$RDMACTL" read --size=4K --offset 0 --help
	assert_success
}

@test "errors name the option: unknown global ones, one after the command, a missing argument" {
	run "$RDMACTL" -Z version
	assert_failure 2
	assert_output --partial "unknown global option '-Z'"
	run "$RDMACTL" --bogus version
	assert_failure 2
	assert_output --partial "unknown global option '--bogus'"
	run "$RDMACTL" probe-topology -V
	assert_failure 2
	assert_output "rdmactl: probe-topology: '-V' is a global option that goes before the command (only -j, -p, -d, -g, -t and -v may follow it; see rdmactl(8), GLOBAL OPTIONS)"
	run "$RDMACTL" write --batch f 198.18.0.1/kv
	assert_failure 2
	assert_output --partial "'--batch' is a global option that goes before the command"
	run "$RDMACTL" write 198.18.0.1/kv --force
	assert_failure 2
	assert_output --partial "'--force' is a global option that goes before the command"
	run "$RDMACTL" --timeout
	assert_failure 2
	assert_output "rdmactl: global option '--timeout' needs an argument (see 'rdmactl --help')"
}

@test "sizes are parsed strictly" {
	for bad in 12Q 1.5M -1 K 4KK 99999999999999999999 16777216T; do
		rdmactl_json write h:1/r --pattern zero --size "$bad"
		assert_failure 2
		jq -e '.error.message | contains("--size")' <<<"$output"
	done
}

@test "targets are parsed strictly" {
	for bad in "" ":1/r" "h:/r" "h:0/r" "h:65536/r" "h:1/" "h:1/a/b" "[::1:7/r"; do
		rdmactl_json read "$bad" --out /dev/null
		assert_failure 2
		jq -e '.error.message | contains("target")' <<<"$output"
	done
	rdmactl_json read --out /dev/null
	assert_failure 2
	rdmactl_json read a:1/r b:1/r --out /dev/null
	assert_failure 2
}

@test "atomics need one operation, 64-bit values and an aligned offset" {
	rdmactl_json atomic h:1/r
	assert_failure 2
	rdmactl_json atomic h:1/r --faa 1 --cas 1,2
	assert_failure 2
	rdmactl_json atomic h:1/r --faa 1 --offset 12
	assert_failure 2
	jq -e '.error.message | contains("8-byte aligned")' <<<"$output"
	rdmactl_json atomic h:1/r --cas 1
	assert_failure 2
	rdmactl_json atomic h:1/r --faa 18446744073709551616
	assert_failure 2
	rdmactl_json atomic h:1/r --faa 1 --bench --msg-size 16
	assert_failure 2
}

@test "--lat-clock takes auto, tsc or monotonic, and only with --lat" {
	for bad in rdtsc TSC ""; do
		rdmactl_json read h:1/r --lat --lat-clock "$bad"
		assert_failure 2
		jq -e '.error.message | contains("--lat-clock")' <<<"$output"
	done
	for cmd in "write h:1/r --bench" "read h:1/r --bench" "atomic h:1/r --faa 1" "atomic h:1/r --faa 1 --bench"; do
		# shellcheck disable=SC2086 # the command and its options, split
		rdmactl_json $cmd --lat-clock tsc
		assert_failure 2
		jq -e '.error.message | contains("--lat-clock goes with --lat")' <<<"$output"
	done
	# Taken: what fails next is the target, not the option.
	rdmactl_json -t 500 read no-such-host.invalid:1/r --lat --lat-clock monotonic
	assert_failure 1
	jq -e '.error.message | contains("lat-clock") | not' <<<"$output"
}

@test "--bench with --lat is refused; a write or read of --size 0 too, as register's" {
	local c
	for c in write read "atomic --faa 1"; do
		run "$RDMACTL" $c 198.18.0.1/kv --bench --lat
		assert_failure 2
		assert_output "rdmactl: ${c%% *}: --bench and --lat are two different runs: give one"
	done
	run "$RDMACTL" write 198.18.0.1/kv --pattern zero --size 0
	assert_failure 2
	assert_output "rdmactl: write: invalid --size '0': a write moves at least 1 byte"
	run "$RDMACTL" read 198.18.0.1/kv --size 0 --out "$BATS_TEST_TMPDIR/x"
	assert_failure 2
	assert_output "rdmactl: read: invalid --size '0': a read moves at least 1 byte"
	run "$RDMACTL" register --listen 198.18.0.1 --size 0
	assert_failure 2
	# a size sweep: MIN:MAX, with --bench
	run "$RDMACTL" write 198.18.0.1/kv --bench --msg-size 8M:8
	assert_failure 2
	assert_output "rdmactl: write: invalid --msg-size '8M:8': MIN:MAX with 1 <= MIN <= MAX"
	run "$RDMACTL" read 198.18.0.1/kv --lat --msg-size 8:8M
	assert_failure 2
	assert_output "rdmactl: read: --msg-size MIN:MAX goes with --bench, not --lat"
	run "$RDMACTL" write 198.18.0.1/kv --bench --msg-size 8:2G
	assert_failure 2
	assert_output "rdmactl: write: --msg-size must be 1 byte to 1 GiB"
	run "$RDMACTL" write 198.18.0.1/kv --bench --msg-size 8:x
	assert_failure 2
	assert_output --partial "invalid --msg-size 'x'"
}

@test "write refuses conflicting or incomplete input" {
	rdmactl_json write h:1/r --pattern zero --file /etc/hostname
	assert_failure 2
	rdmactl_json write h:1/r --pattern zero
	assert_failure 2
	rdmactl_json write h:1/r --pattern ones --size 4K
	assert_failure 2
	rdmactl_json write h:1/r --pattern zero --size 4K --imm 4294967296
	assert_failure 2
	rdmactl_json write h:1/r --file /nonexistent/file
	assert_failure 1
	[ "$(jq -r .error.code <<<"$output")" = ENOENT ]
}

@test "read needs --out with -j: stdout holds the JSON report" {
	rdmactl_json read h:1/r
	assert_failure 2
	jq -e '.error.message | contains("--out")' <<<"$output"
}

@test "register checks every region before touching a device" {
	rdmactl_json register --size 1M
	assert_failure 2
	jq -e '.error.message | contains("--listen")' <<<"$output"
	rdmactl_json register --listen 127.0.0.1:7471
	assert_failure 2
	rdmactl_json register --listen 127.0.0.1:7471 --size 0
	assert_failure 2
	rdmactl_json register --listen 127.0.0.1:7471 --size 1M --access rwx
	assert_failure 2
	rdmactl_json register --listen 127.0.0.1:7471 --size 1M --mem gpu
	assert_failure 2
	rdmactl_json register --listen 127.0.0.1:7471 --size 1M --mem file
	assert_failure 2
	rdmactl_json register --listen 127.0.0.1:7471 --name a/b --size 1M
	assert_failure 2
	rdmactl_json register --listen 127.0.0.1:7471 --size 1M --size 2M
	assert_failure 2
	jq -e '.error.message | contains("--name")' <<<"$output"
	rdmactl_json register --listen 127.0.0.1:7471 --size 1M --token "has space"
	assert_failure 2
	rdmactl_json register --listen 127.0.0.1:99999 --size 1M
	assert_failure 2
}

@test "register --flush-every takes a duration and needs a writable file-backed region" {
	local bad
	for bad in 0 50ms 25h 1x s -1 1.5s; do
		rdmactl_json register --listen 127.0.0.1:7471 --file /nonexistent/f --flush-every "$bad"
		assert_failure 2
		jq -e '.error.message | contains("invalid --flush-every")' <<<"$output"
	done
	rdmactl_json register --listen 127.0.0.1:7471 --size 1M --flush-every 1s
	assert_failure 2
	jq -e '.error.message | contains("no writable region has --file")' <<<"$output"
	rdmactl_json register --listen 127.0.0.1:7471 --file /nonexistent/f --access ro --flush-every 1s
	assert_failure 2
	# A good duration gets past the checks: what fails then is the device.
	for good in 100ms 30s 5m 10; do
		rdmactl_json register --listen 127.0.0.1:7471 --file /nonexistent/f --flush-every "$good"
		refute_output --partial "flush-every"
	done
	run "$RDMACTL" __complete register --flush
	assert_line --flush-every
}

@test "global options are checked" {
	run "$RDMACTL" -t 0 version
	assert_failure 2
	run "$RDMACTL" -g 300 version
	assert_failure 2
	run "$RDMACTL" --bogus version
	assert_failure 2
	run "$RDMACTL" -p version
	assert_success
	jq -e '.version' <<<"$output"
}

@test "-j -p -d -g -t -v may follow the command, as they may precede it" {
	local d=$BATS_TEST_TMPDIR
	# each one after the command does what it does before it
	run "$RDMACTL" version -j
	assert_success
	assert_output "$("$RDMACTL" -j version)"
	run "$RDMACTL" version --pretty
	assert_success
	assert_output "$("$RDMACTL" -p version)"
	run "$RDMACTL" probe-topology -d nodev
	assert_failure 1
	assert_output --partial "'nodev'"
	run "$RDMACTL" write 198.18.0.1/kv --pattern zero --size 4K -t 0
	assert_failure 2
	assert_output "rdmactl: write: invalid --timeout: expected milliseconds, 1..3600000"
	run "$RDMACTL" write 198.18.0.1/kv --pattern zero --size 4K -g 300
	assert_failure 2
	assert_output "rdmactl: write: invalid --gid-index: expected 0..255"
	# perftest's order and the README's register row parse (no usage error)
	run "$RDMACTL" write -d rxe_a 198.18.0.1/kv --pattern zero --size 4K
	refute_output --partial "global option"
	[[ $status != 2 ]] || fail "write -d DEV TARGET is a usage error: $output"
	run "$RDMACTL" register --listen 198.18.0.1:7471,198.18.1.1:7471 -d rxe_a,rxe_c --size 4K
	refute_output --partial "global option"
	[[ $status != 2 ]] || fail "register --listen A1,A2 -d DEV1,DEV2 is a usage error: $output"
	# an error after -j is a JSON document
	run "$RDMACTL" write 198.18.0.1/kv -j --bogus
	assert_failure 2
	[[ $(jq -r .error.message <<<"$output") == "write: unknown option '--bogus' (see 'rdmactl write --help')" ]] ||
		fail "not the error document: $output"
	# in a batch, one given after a command holds for that line only
	printf 'probe-topology -d nodev\nprobe-topology\nversion -j\nversion\n' >"$d/b"
	run "$RDMACTL" --force -b "$d/b"
	assert_failure 1
	assert_line --partial "$d/b:1: no RDMA device named 'nodev'"
	assert_line '{"schema_version":2,"version":"'"$("$RDMACTL" -j version | jq -r .version)"'"}'
	assert_line "rdmactl $("$RDMACTL" -j version | jq -r .version)"
	[[ $(grep -c "no RDMA device named" <<<"$output") == 1 ]] || fail "-d held past its line: $output"
}

@test "without RDMA, commands that need it fail with a clear error, not a crash" {
	[ ! -e /dev/infiniband/rdma_cm ] || skip "this machine has RDMA: covered by tests/rxe"
	rdmactl_json write 127.0.0.1:7471/r --pattern zero --size 4K
	assert_failure 1
	jq -e '.error.message | test("RDMA")' <<<"$output"
	rdmactl_json register --listen 127.0.0.1:7471 --size 1M
	assert_failure 1
	jq -e '.error.message | test("RDMA")' <<<"$output"
}

@test "the -j contract: --help is JSON, no command is an error document, help of a sub-command" {
	rdmactl_json write --help
	assert_success
	[ "$(jq -r .command.name <<<"$output")" = write ]
	rdmactl_json kvxfer plan --help
	assert_success
	[ "$(jq -r .command.name <<<"$output")" = "kvxfer plan" ]
	# no command: one error document and exit 2, not the table and 0
	rdmactl_json
	assert_failure 2
	[ "$(jq -r .error.code <<<"$output")" = EINVAL ]
	[ "$(jq -r 'has("commands")' <<<"$output")" = false ]
	run "$RDMACTL" help kvxfer plan
	assert_success
	assert_line --index 0 "Usage: rdmactl kvxfer plan [OPTIONS]"
	run "$RDMACTL" help kvxfer nope
	assert_failure 2
	assert_output "rdmactl: help: 'kvxfer' has no sub-command 'nope'"
}

@test "output that cannot be written is a failure that says so" {
	[[ -w /dev/full ]] || skip "no /dev/full"
	run bash -c '"$0" help >/dev/full' "$RDMACTL"
	assert_failure 1
	assert_output "rdmactl: cannot write the output to standard output"
	run bash -c '"$0" -j help >/dev/full' "$RDMACTL"
	assert_failure 1
	assert_output --partial "cannot write the output"
}

@test "local inputs fail before any device is opened, naming the input" {
	run "$RDMACTL" write --file "$BATS_TEST_TMPDIR" 198.18.0.1/kv
	assert_failure 1
	assert_output "rdmactl: write: --file '$BATS_TEST_TMPDIR' is a directory: name a file"
	run "$RDMACTL" read --size 4K --out "$BATS_TEST_TMPDIR/no/such/f" 198.18.0.1/kv
	assert_failure 1
	assert_output "rdmactl: read: --out '$BATS_TEST_TMPDIR/no/such/f': no such directory '$BATS_TEST_TMPDIR/no/such'"
	run "$RDMACTL" read --size 4K --out "$BATS_TEST_TMPDIR" 198.18.0.1/kv
	assert_failure 1
	assert_output "rdmactl: read: --out '$BATS_TEST_TMPDIR' is a directory: name a file"
	[[ ! -e $BATS_TEST_TMPDIR/no ]] || fail "read created $BATS_TEST_TMPDIR/no"
}

@test "no RDMA device: the error gives the fix and points to probe-topology" {
	[[ ! -e /dev/infiniband/rdma_cm ]] || skip "this host has the RDMA CM"
	run "$RDMACTL" read --size 4K --out "$BATS_TEST_TMPDIR/f" 198.18.0.1/kv
	assert_failure 1
	assert_output --partial "cannot open the RDMA CM"
	assert_output --partial "'modprobe rdma_ucm'"
	assert_output --partial "'rdma link add rxe0 type rxe netdev IF'"
	assert_output --partial "'rdmactl probe-topology'"
	[[ ! -e $BATS_TEST_TMPDIR/f ]] || fail "read created its --out file before it connected"
}

@test "help wraps to 80 columns off a terminal, for every command" {
	local c long
	for c in "" $("$RDMACTL" -j help | jq -r '.commands[] | select((.hidden or .shell_only) | not) | .name'); do
		run "$RDMACTL" $c --help
		assert_success
		long=$(awk 'length > 80 && !/^Usage: /' <<<"$output")
		[[ -z $long ]] || fail "rdmactl $c --help has lines over 80 columns: $long"
	done
	# a wrapped help text goes on at its column, nothing lost
	run "$RDMACTL" alltoall --help
	assert_line "  -a, --algo ALGO                flat (every rank connects to every other), ring"
	assert_line "                                 rank of the same local index on every other"
	assert_line "                                 node) (default flat)"
}

@test "one exit code per kind: a local file that cannot be read is 1, naming the option; malformed is 2" {
	local d=$BATS_TEST_TMPDIR
	run "$RDMACTL" alltoall -r 0 -w 2 -R "file:$d"
	assert_failure 1
	assert_output "rdmactl: --rendezvous '$d' is a directory: name a file"
	run "$RDMACTL" multicast -r 1 -w 2 -R "file:$d/none" --size 4K
	assert_failure 1
	assert_output "rdmactl: --rendezvous '$d/none': No such file or directory"
	run "$RDMACTL" -b "$d"
	assert_failure 1
	assert_output "rdmactl: --batch '$d' is a directory: name a file"
	printf '{"layers":' >"$d/m.json"
	chmod 000 "$d/m.json"
	if [[ $(id -u) != 0 ]]; then
		run "$RDMACTL" kvxfer plan --model "$d/m.json" --tokens 1
		assert_failure 1
		assert_output --partial "cannot read it"
	fi
	chmod 644 "$d/m.json"
	run "$RDMACTL" kvxfer plan --model "$d/m.json" --tokens 1
	assert_failure 2
	refute_output --partial "line -1"
}

@test "errors name their cause: local inputs before the RDMA CM, a size too large, TARGET explained" {
	local d=$BATS_TEST_TMPDIR peers=$BATS_TEST_TMPDIR/peers
	printf '0 198.18.0.1:20000\n1 198.18.0.1:20001\n' >"$peers"
	run "$RDMACTL" register --file "$d/no/x" --size 4K --listen 198.18.0.1:7471
	assert_failure 1
	assert_output "rdmactl: register: --file '$d/no/x': no such directory '$d/no'"
	RDMACTL_CUDA_LIB=$d/none.so run "$RDMACTL" register --mem cuda:7 --size 4K --listen 198.18.0.1:7471
	assert_failure 1
	assert_output --partial "rdmactl: --mem cuda:7: "
	refute_output --partial "RDMA CM"
	RDMACTL_CUDA_LIB=$d/none.so run "$RDMACTL" multicast -r 1 -w 2 -R "file:$peers" --mem cuda:0
	assert_failure 1
	assert_output --partial "rdmactl: --mem cuda:0: "
	refute_output --partial "RDMA CM"
	run "$RDMACTL" alltoall -r 0 -w 2 -R "file:$peers" --svg "$d/no/x.svg"
	assert_failure 1
	assert_output "rdmactl: --svg '$d/no/x.svg': no such directory '$d/no'"
	run "$RDMACTL" write --size 99999999999T --pattern zero 198.18.0.1/kv
	assert_failure 2
	assert_output "rdmactl: invalid --size '99999999999T': too large (a size is below 16 EiB)"
	run "$RDMACTL" register --size 99999999999T --listen 198.18.0.1
	assert_failure 2
	assert_output --partial "too large"
	run "$RDMACTL" write --size 12Q --pattern zero 198.18.0.1/kv
	assert_output --partial "expected a size such as"
	# sizes are binary, rates decimal: 4MB, which a rate reads as 4*10^6, is no size
	run "$RDMACTL" write --size 4MB --pattern zero 198.18.0.1/kv
	assert_failure 2
	assert_output "rdmactl: invalid --size '4MB': a size is binary: say 4M or 4MiB (MB and such are a rate's decimal units)"
	run "$RDMACTL" write --bench --msg-size 64kb 198.18.0.1/kv
	assert_failure 2
	assert_output --partial "invalid --msg-size '64kb': a size is binary"
	local c
	for c in write read atomic; do
		run "$RDMACTL" "$c" --help
		assert_line "Arguments:"
		assert_output --partial "TARGET                         the region: HOST:PORT/REGION,"
	done
}

# One rule (rdmactl(8), EXIT STATUS): a file named by an option that cannot
# be read or used as it is fails, 1, naming the option; one read whose
# contents are malformed is a usage error, 2.
@test "one exit-code rule for input files: unreadable or unusable 1, malformed 2" {
	local d=$BATS_TEST_TMPDIR peers=$BATS_TEST_TMPDIR/peers want msg args
	printf '0 198.18.0.1:20000\n1 198.18.0.1:20001\n' >"$peers"
	printf 's3cret\n' >"$d/open"
	chmod 644 "$d/open"
	printf '1,2\n' >"$d/bad.csv"
	printf 'zero one\n' >"$d/badpeers"
	while IFS='|' read -r want msg args; do
		read -ra words <<<"$args"
		run "$RDMACTL" "${words[@]}"
		[[ $status == "$want" ]] || fail "rdmactl $args: exit $status, not $want: $output"
		[[ $output == *"$msg"* ]] || fail "rdmactl $args: not '$msg': $output"
	done <<EOF
1|--skew matrix '/nonexistent.csv': No such file or directory|alltoall -r 0 -w 2 -R file:$peers --skew matrix:/nonexistent.csv
1|--rendezvous '/nonexistent': No such file or directory|alltoall -r 0 -w 2 -R file:/nonexistent
1|--rendezvous '/nonexistent': No such file or directory|sweep -r 0 -w 2 -R file:/nonexistent
1|--pairs /nonexistent: No such file or directory|sweep -r 0 -w 2 -R file:$peers --pairs /nonexistent
1|--file '/nonexistent': No such file or directory|write --file /nonexistent 198.18.0.1/kv
1|/nonexistent: No such file or directory|multicast -r 0 -w 2 -R file:$peers --file /nonexistent
1|--token-file /nonexistent: cannot read it|write --pattern zero --size 4K --token-file /nonexistent 198.18.0.1/kv
1|--token-file $d/open: group or others may read or write it (mode 0644)|write --pattern zero --size 4K --token-file $d/open 198.18.0.1/kv
1|--batch '/nonexistent': No such file or directory|-b /nonexistent
1|--model '/nonexistent': No such file or directory|kvxfer plan --model /nonexistent --tokens 4
2|$d/bad.csv: 1 rows, the world size is 2|alltoall -r 0 -w 2 -R file:$peers --skew matrix:$d/bad.csv
2|$d/badpeers:1: expected 'RANK ADDR:PORT [HOSTNAME]'|alltoall -r 0 -w 2 -R file:$d/badpeers
2|--pairs $d/bad.csv: line 1: expected two ranks|sweep -r 0 -w 2 -R file:$peers --pairs $d/bad.csv
EOF
}

# short_clashes TABLE: each short letter that names two long options, or a
# global option, or -h, one line each ("-s: multicast --size, write
# --msg-size"); nothing when every letter means one thing.
short_clashes() {
	jq -r '([.global_options[] | select(.short) | .short] + ["h"]) as $g
		| [.commands[] | .name as $c | .options[] | select(.short) | {s: .short, l: .name, c: $c}]
		| (.[] | select(.s as $s | $g | index($s)) | "-\(.s): \(.c) --\(.l) is a global option"),
		  (group_by(.s)[] | select((map(.l) | unique | length) > 1)
			| "-\(.[0].s): " + (map("\(.c) --\(.l)") | unique | join(", ")))' "$1"
}

@test "a short option means one thing in every command, and is no global option" {
	local table=$BATS_TEST_TMPDIR/table.json sub
	"$RDMACTL" -j help >"$BATS_TEST_TMPDIR/help.json"
	# kvxfer's sub-commands, from their own --help, next to the commands.
	{
		cat "$BATS_TEST_TMPDIR/help.json"
		for sub in plan serve send; do "$RDMACTL" -j kvxfer "$sub" --help; done
	} | jq -s '.[0] + {commands: (.[0].commands + [.[1:][] | .command])}' >"$table"
	[ "$(jq '[.commands[] | .options[] | select(.short)] | length' "$table")" -ge 20 ] ||
		fail "the table lists too few short options"
	jq -e 'any(.commands[]; .name == "kvxfer plan")' "$table" >/dev/null || fail "kvxfer plan is not in the table"
	run short_clashes "$table"
	assert_output ""
	# The check can fail: multicast with its old -p and -s.
	jq '(.commands[] | select(.name == "multicast") | .options[] | select(.name == "pattern")).short = "p"
	    | (.commands[] | select(.name == "multicast") | .options[] | select(.name == "size")).short = "s"' \
		"$table" >"$BATS_TEST_TMPDIR/bad.json"
	run short_clashes "$BATS_TEST_TMPDIR/bad.json"
	assert_line "-p: multicast --pattern is a global option"
	assert_line "-s: atomic --msg-size, multicast --size, read --msg-size, sweep --msg-size, write --msg-size"
}

@test "the moved short options parse as their long names, the old ones are refused" {
	run "$RDMACTL" multicast -r 0 -w 2 -P bogus
	assert_failure 2
	assert_output --partial "--pattern 'bogus'"
	run "$RDMACTL" multicast -r 0 -w 2 -S 1Q
	assert_failure 2
	assert_output --partial "--size '1Q'"
	# -p is --pretty, wherever it stands: never the pattern
	run "$RDMACTL" multicast -r 0 -w 2 -p zero
	assert_failure 2
	assert_line '  "schema_version": 2,'
	refute_output --partial "--pattern 'zero'"
	run "$RDMACTL" alltoall -r 0 -w 2 -n 0
	assert_failure 2
	assert_output --partial "--iters '0'"
	run "$RDMACTL" alltoall -r 0 -w 2 -i 3
	assert_failure 2
	assert_output --partial "unknown option '-i'"
}

@test "write reading stdin from a terminal says where the data is awaited; from a pipe it says nothing" {
	command -v script >/dev/null || skip "script(1) (bsdutils) is not installed"
	# script(1) gives the command a terminal on stdin; the missing device ends it
	run timeout 30 script -qec "'$RDMACTL' write 198.18.0.1:7471/kv" /dev/null
	assert_failure 1
	assert_output --partial "write: the data comes from the terminal (stdin): type it and end with Ctrl-D"
	run timeout 30 "$RDMACTL" write 198.18.0.1:7471/kv </dev/null
	assert_failure 1
	refute_output --partial "comes from the terminal"
	# --file or --pattern: nothing is read from the terminal, nothing said
	run timeout 30 script -qec "'$RDMACTL' write 198.18.0.1:7471/kv --pattern zero --size 4K" /dev/null
	assert_failure 1
	refute_output --partial "comes from the terminal"
}

# The options' help texts with a default written by hand as "(default X)"
# ("; default X"), except the one help prints from the row, once, at the
# end. A default that depends on other options is said "(default: ...)".
hand_defaults() {
	jq -r '[.commands[].options[], .global_options[]][]
		| select((.help | test("[(;] ?default [^:]")) and
			(.default as $d | ($d == null) or (.help | endswith(" (default \($d))") | not)
			 or (.help | [scan("default ")] | length) > 1))
		| "--\(.name): \(.help)"' "$1"
}

@test "no help text writes a default by hand: help prints each from its row, once" {
	"$RDMACTL" -j help >"$BATS_TEST_TMPDIR/table.json"
	run hand_defaults "$BATS_TEST_TMPDIR/table.json"
	assert_success
	assert_output ""
	# rows that print their default: typed ones and untyped ones alike
	run "$RDMACTL" write --help
	assert_output --partial "(default 1M)"
	assert_output --partial "(default 128)"
	jq -e '[.commands[] | select(.name == "write") | .options[] | select(.name == "stripe" or .name == "depth") | .default] == ["1M", "128"]' "$BATS_TEST_TMPDIR/table.json"
	# The check can fail: a default written into a help text by hand.
	jq '(.commands[] | select(.name == "write") | .options[] | select(.name == "stripe")) |= (.help += " (default 2M)" | .default = null)' \
		"$BATS_TEST_TMPDIR/table.json" >"$BATS_TEST_TMPDIR/bad.json"
	run hand_defaults "$BATS_TEST_TMPDIR/bad.json"
	assert_output --partial "--stripe: with several rails"
}
