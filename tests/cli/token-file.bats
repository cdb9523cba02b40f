#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Secrets off argv: every command that takes a token reads it from
# --token-file FILE (first line, private file) or $RDMACTL_TOKEN, and says
# which file is wrong and why. Checked before any device is touched.

load helpers

setup() {
	require_binary
	unset RDMACTL_TOKEN
	tok=$BATS_TEST_TMPDIR/tok
	printf 's3cret\n' >"$tok"
	chmod 600 "$tok"
}

# Each command that takes a token, as argv words up to the options (the
# token options follow); each fails at the token before it connects.
commands=(
	"read 192.0.2.1/r"
	"write 192.0.2.1/r -i 1"
	"atomic 192.0.2.1/r --faa 1"
	"register -N r -S 4K --listen 192.0.2.1"
	"migrate 192.0.2.1/r 192.0.2.2/r --whole"
	"kvxfer serve --listen 192.0.2.1:7500 --layers 1 --kv-heads 1 --head-dim 8 --pool-pages 4"
	"kvxfer send --connect 192.0.2.1:7500 --layers 1 --kv-heads 1 --head-dim 8 --tokens 4"
	"alltoall -r 0 -w 2 -R file:/nonexistent"
	"multicast -r 0 -w 2 -R file:/nonexistent --size 4K"
)

@test "every command that takes a token takes --token-file" {
	for c in "${commands[@]}"; do
		read -ra words <<<"$c"
		local n=1
		if [[ ${words[0]} == kvxfer ]]; then n=2; fi
		run "$RDMACTL" "${words[@]:0:n}" --help
		# help is wrapped to the terminal: read it with its blanks joined
		output=$(tr -s " \n" "  " <<<"$output")
		[[ $output == *"--token-file FILE"* ]] || fail "$c: no --token-file in its help"
		[[ $output == *"visible in /proc"* ]] || fail "$c: --token's help does not say it is visible"
	done
}

@test "--token-file: a missing file is a failure (exit 1, as every input file) naming it" {
	for c in "${commands[@]}"; do
		read -ra words <<<"$c"
		run "$RDMACTL" "${words[@]}" --token-file "$BATS_TEST_TMPDIR/none"
		[ "$status" -eq 1 ] || fail "$c: exit $status: $output"
		[[ $output == *"--token-file $BATS_TEST_TMPDIR/none: cannot read it: No such file or directory"* ]] ||
			fail "$c: $output"
	done
}

@test "--token-file: a file group or others may read is refused, as ssh refuses keys (exit 1, a file that cannot be used)" {
	chmod 640 "$tok"
	for c in "${commands[@]}"; do
		read -ra words <<<"$c"
		run "$RDMACTL" "${words[@]}" --token-file "$tok"
		[ "$status" -eq 1 ] || fail "$c: exit $status: $output"
		[[ $output == *"--token-file $tok: group or others may read or write it (mode 0640): make it private (chmod 600 $tok)"* ]] ||
			fail "$c: $output"
	done
	chmod 606 "$tok"
	run "$RDMACTL" read 192.0.2.1/r --token-file "$tok"
	assert_failure 1
	assert_output --partial "(mode 0606)"
}

@test "--token-file: an empty first line, a directory, an invalid or overlong token are refused" {
	printf '\nsecond\n' >"$tok"
	run "$RDMACTL" read 192.0.2.1/r --token-file "$tok"
	assert_failure 2
	assert_output --partial "--token-file $tok: its first line is empty"
	: >"$tok"
	run "$RDMACTL" read 192.0.2.1/r --token-file "$tok"
	assert_failure 2
	assert_output --partial "its first line is empty"
	printf 'has space\n' >"$tok"
	run "$RDMACTL" alltoall -r 0 -w 2 -R file:/nonexistent --token-file "$tok"
	assert_failure 2
	assert_output --partial "--token-file $tok: a token is 1 to 56 printable characters without spaces"
	printf '%057d\n' 0 >"$tok"
	run "$RDMACTL" register -N r -S 4K --listen 192.0.2.1 --token-file "$tok"
	assert_failure 2
	assert_output --partial "--token-file $tok: its first line is longer than 56 characters"
	mkdir "$BATS_TEST_TMPDIR/d"
	chmod 700 "$BATS_TEST_TMPDIR/d"
	run "$RDMACTL" read 192.0.2.1/r --token-file "$BATS_TEST_TMPDIR/d"
	assert_failure 1
	assert_output --partial "a directory, not a file"
}

@test "--token and --token-file together are refused; a bad \$RDMACTL_TOKEN is named" {
	run "$RDMACTL" read 192.0.2.1/r --token s3cret --token-file "$tok"
	assert_failure 2
	assert_output --partial "give --token or --token-file, not both"
	RDMACTL_TOKEN='a b' run "$RDMACTL" write 192.0.2.1/r -i 1
	assert_failure 2
	assert_output --partial 'invalid $RDMACTL_TOKEN: 1 to 56 printable characters without spaces'
	run "$RDMACTL" multicast -r 0 -w 2 -R file:/nonexistent --size 4K --token 'x y'
	assert_failure 2
	assert_output --partial "invalid --token"
}
