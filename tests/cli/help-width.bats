#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Help that scans (issue #50): in every --help, each option's text and each
# command's summary fit one 80-column line; the man pages carry the detail.
# tests/lib/help-width.awk reads the text as printed where stdout is no
# terminal (wrapped to 80 columns) and names each row that wrapped.
#   bats tests/cli/help-width.bats
#
# Exceptions, with why:
#   alltoall: --algo, multicast: --algo  what connections each algorithm
#       makes decides a job's size: --help says it whole, next to --plan
#       (tests/cli/plan.bats asserts it).
#   kvxfer: --mem, --gpu-reg  the parent's help leads each row with the
#       sub-commands that take it ("serve, send: ", 13 columns), and these
#       two do not fit beside it; `kvxfer serve --help` and `kvxfer send
#       --help`, which a user runs, show them on one line (checked here).
#   TARGET's paragraph (Arguments) is a paragraph, not a row: not checked.

load helpers

EXCEPT='^(kvxfer: --(mem|gpu-reg)|alltoall: --algo|multicast: --algo): [0-9]+ lines$'

# What does not fit in the --help of every command, sub-command and of
# rdmactl itself.
wide_help() {
	local c s
	"$RDMACTL" --help | awk -v cmd=rdmactl -f "$ROOT/tests/lib/help-width.awk"
	for c in $("$RDMACTL" -j help | jq -r '.commands[] | select((.hidden or .shell_only) | not) | .name'); do
		"$RDMACTL" "$c" --help | awk -v cmd="$c" -f "$ROOT/tests/lib/help-width.awk"
		for s in $("$RDMACTL" __complete "$c" ''); do
			[[ $s == -* ]] && continue
			"$RDMACTL" "$c" "$s" --help | awk -v cmd="$c $s" -f "$ROOT/tests/lib/help-width.awk"
		done
	done
}

@test "every --help shows each option and each command on one 80-column line" {
	run wide_help
	assert_success
	run grep -vE "$EXCEPT" <<<"$output"
	assert_output ""
	# the sub-commands were read: kvxfer serve's --mem is there, on one line
	run "$RDMACTL" kvxfer serve --help
	assert_line --regexp '^      --mem KIND +[^ ].*\(default host\)$'
}

@test "the shell's own commands' options fit too (33 columns of names, 47 of text)" {
	local table
	table=$("$RDMACTL" -j help)
	run jq -r '.commands[] | select(.shell_only) | .name as $c | .options[]
		| select(33 + (.help | length) > 80) | "\($c): --\(.name)"' <<<"$table"
	assert_success
	assert_output ""
	run jq -r '[.commands[] | select(.shell_only) | .options[]] | length' <<<"$table"
	((output > 0))
}

@test "the check names a wrapped option, a wrapped summary and a wide line, and passes a row that fits" {
	local long
	long=$(printf 'x%.0s' {1..81})
	run awk -v cmd=t -f "$ROOT/tests/lib/help-width.awk" <<EOF
$long
Commands:
  write            write a file, stdin or a pattern into a served region (RDMA
                   WRITE)
  read             read bytes

Options:
  -P, --pattern PATTERN          write a generated pattern: zero, seq or
                                 random:SEED
  -S, --size SIZE                bytes to write
      --allow-unauthenticated-migration
                                 no admin token: any client may migrate
      --rails PLAN               the rails of probe-topology's rail plan: auto
                                 (this process's GPU, else its NUMA node), gpu:N
                                 or numa:N

Arguments:
  TARGET                         the region: HOST:PORT/REGION, [IPV6]:PORT/REG
                                 or HOST/REGION
EOF
	assert_success
	assert_output "t: 81 columns: $long
t: write: 2 lines
t: --pattern: 2 lines
t: --rails: 3 lines"
}
