#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Nested sub-commands (kvxfer plan, serve, send): each parses, helps and
# completes from its own option table.

load helpers

setup() {
	require_binary
}

GEOM=(--layers 2 --kv-heads 8 --head-dim 128)

@test "kvxfer SUB --help lists that sub-command's options only" {
	run "$RDMACTL" kvxfer plan --help
	assert_success
	assert_line --partial "Usage: rdmactl kvxfer plan [OPTIONS]"
	assert_output --partial "--tokens N"
	assert_output --partial "--link-gbps RATE"
	refute_output --partial "--connect"
	refute_output --partial "--listen"
	run "$RDMACTL" kvxfer serve --help
	assert_success
	assert_output --partial "--listen ADDR:PORT"
	assert_output --partial "--pool-pages N"
	refute_output --partial "--connect"
	refute_output --partial "--link-gbps"
	run "$RDMACTL" kvxfer send --help
	assert_success
	assert_output --partial "--connect ADDR:PORT"
	assert_output --partial "--no-stream"
	refute_output --partial "--listen"
	refute_output --partial "--scatter"
	# kvxfer's own help still lists every option of every sub-command.
	run "$RDMACTL" kvxfer --help
	assert_success
	assert_output --partial "--connect ADDR:PORT"
	assert_output --partial "--listen ADDR:PORT"
	assert_output --partial "--link-gbps RATE"
}

@test "an option of another sub-command is named, long or short, with = or not" {
	for form in "--connect 1.2.3.4:5" "--connect=1.2.3.4:5" "-c 1.2.3.4:5" "-c1.2.3.4:5"; do
		# shellcheck disable=SC2086
		run "$RDMACTL" kvxfer plan "${GEOM[@]}" --tokens 16 $form
		assert_failure 2
		assert_output --partial "kvxfer plan: --connect does not apply here"
	done
	run "$RDMACTL" kvxfer send "${GEOM[@]}" --tokens 16 --scatter 7
	assert_failure 2
	assert_output --partial "kvxfer send: --scatter does not apply here"
	# An option's argument that looks like an option is not read as one.
	run "$RDMACTL" kvxfer plan "${GEOM[@]}" --tokens 16 --model -c
	assert_failure 1
	assert_output --partial "--model '-c': No such file or directory"
	refute_output --partial "does not apply"
}

@test "the sub-command first or last: the same plan" {
	run "$RDMACTL" -j kvxfer plan "${GEOM[@]}" --tokens 64
	assert_success
	local first=$output
	run "$RDMACTL" -j kvxfer "${GEOM[@]}" --tokens 64 plan
	assert_success
	assert_equal "$output" "$first"
	jq -e '.bytes_per_request == 524288 and .tokens == 64' <<<"$first"
}

@test "__complete: a nested sub-command completes from its own table" {
	run "$RDMACTL" __complete kvxfer serve --
	assert_success
	assert_line --listen
	assert_line --pool-pages
	refute_line --connect
	refute_line --link-gbps
	run "$RDMACTL" __complete kvxfer send --
	assert_success
	assert_line --connect
	assert_line --no-stream
	refute_line --listen
	run "$RDMACTL" __complete kvxfer ""
	assert_success
	assert_line plan
	assert_line serve
	assert_line send
}

@test "an option given to the wrong sub-command is named with the sub-command it belongs to" {
	run "$RDMACTL" kvxfer send "${GEOM[@]}" --tokens 16 --scatter 7
	assert_failure 2
	assert_output --partial "--scatter belongs to 'kvxfer serve', not 'kvxfer send'"
	# Several owners, all named; and the sub-command last (options first).
	run "$RDMACTL" kvxfer --pool-pages 64 "${GEOM[@]}" send
	assert_failure 2
	assert_output --partial "--pool-pages belongs to 'kvxfer plan' and 'kvxfer serve', not 'kvxfer send'"
	run "$RDMACTL" kvxfer plan "${GEOM[@]}" --tokens 16 -c 1.2.3.4:5
	assert_failure 2
	assert_output --partial "--connect belongs to 'kvxfer send', not 'kvxfer plan'"
	# An option of the sub-command itself is not refused: the check can pass.
	run "$RDMACTL" kvxfer plan "${GEOM[@]}" --tokens 16 --pool-pages 64
	assert_success
	refute_output --partial "belongs to"
}

@test "help prints each default from its row: the value used when the option is left out" {
	local o def n=0 plain
	run "$RDMACTL" -j kvxfer plan "${GEOM[@]}" --tokens 64
	assert_success
	plain=$output
	while IFS=$'\t' read -r o def; do
		n=$((n + 1))
		# the default in the help line is the one in the row
		"$RDMACTL" kvxfer plan --help | tr -s ' \n' ' ' | grep -qF -- "(default $def)" ||
			fail "kvxfer plan --help does not show --$o's default $def"
		# and giving it changes nothing
		run "$RDMACTL" -j kvxfer plan "${GEOM[@]}" --tokens 64 "--$o" "$def"
		assert_success
		[[ $output == "$plain" ]] || fail "--$o $def (its help's default) plans otherwise than leaving it out"
	done < <("$RDMACTL" -j help kvxfer plan | jq -r '.command.options[] | select(.default) | "\(.name)\t\(.default)"')
	((n >= 6)) || fail "only $n options with a default"
	# The comparison can fail: a value other than the default plans otherwise.
	run "$RDMACTL" -j kvxfer plan "${GEOM[@]}" --tokens 64 --page-tokens 32
	assert_success
	[[ $output != "$plain" ]] || fail "--page-tokens 32 planned as the default 16"
}


@test "kvxfer's help leads each option with the sub-commands that take it, read from the same rows" {
	local o want got n=0
	declare -A takes=()
	for s in plan serve send; do
		for o in $("$RDMACTL" -j help kvxfer "$s" | jq -r '.command.options[].name'); do
			takes[$o]+="${takes[$o]:+, }$s"
		done
	done
	while IFS=$'\t' read -r o got; do
		want=${takes[$o]}
		[[ $want == "plan, serve, send" ]] && want=
		[[ $got == "$want" ]] || fail "--$o: kvxfer's help says '$got', the sub-commands' tables '$want'"
		[[ -n $want ]] && n=$((n + 1))
	done < <("$RDMACTL" -j help kvxfer | jq -r '.command.options[]
			| "\(.name)\t\((.help | capture("^(?<s>(plan|serve|send)(, (serve|send))*): ") | .s) // "")"')
	((n >= 20)) || fail "only $n options led by their sub-commands"
	# A sub-command's own help does not name it again.
	run "$RDMACTL" kvxfer serve --help
	assert_output --partial "permute the free page list"
	refute_output --partial "serve: permute"
	run "$RDMACTL" kvxfer --help
	assert_output --partial "serve: permute the free page list"
}
