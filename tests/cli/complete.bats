#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Completion: rdmactl __complete and the bash and zsh scripts that call it.

load helpers

setup() {
	require_binary
	BIN_DIR="$(dirname "$RDMACTL")"
}

# Complete like bash does: source the script, set COMP_WORDS/COMP_CWORD,
# call the function, print COMPREPLY one a line.
bash_complete() {
	PATH="$BIN_DIR:$PATH" bash -c '
		source "$1/completions/rdmactl.bash"
		shift
		COMP_WORDS=("$@")
		COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"
		COMP_POINT=${#COMP_LINE}
		_rdmactl
		printf "%s\n" "${COMPREPLY[@]}"' _ "$ROOT" "$@"
}

@test "__complete: commands, never aliases, hidden or shell-only ones" {
	run "$RDMACTL" __complete ""
	assert_success
	assert_line register
	assert_line write
	# help lists no alias, so completion offers none (they still run)
	refute_line serve
	refute_line topo
	assert_line shell
	refute_line __complete
	refute_line regions
	refute_line unregister
	run "$RDMACTL" __complete wr
	assert_output write
	run "$RDMACTL" __complete to
	assert_success
	assert_output ""
	run "$RDMACTL" serve --help
	assert_success
}

@test "__complete: global options, then the command after them" {
	run "$RDMACTL" __complete --ti
	assert_output --timeout
	run "$RDMACTL" __complete -j --timeout 500 -d mlx5_0 ve
	assert_output version
	run "$RDMACTL" __complete -b ""
	assert_output __files
}

@test "__complete: after --opt= (one word, or bash's split --opt = ), and a device list after its comma" {
	run "$RDMACTL" __complete write --lat-clock=
	assert_output "$(printf -- '--lat-clock=auto\n--lat-clock=tsc\n--lat-clock=monotonic')"
	run "$RDMACTL" __complete write --lat-clock=m
	assert_output --lat-clock=monotonic
	run "$RDMACTL" __complete write --lat-clock = t
	assert_output tsc
	run "$RDMACTL" __complete -j --batch=x
	assert_output ""
	bash "$ROOT/tests/fixtures/make-sysfs.sh" "$BATS_TEST_TMPDIR/fx" >/dev/null
	run env RDMACTL_SYSFS="$BATS_TEST_TMPDIR/fx/shared-nic" "$RDMACTL" __complete write -d rxe0,m
	assert_equal "$(sort <<<"$output")" "$(printf 'rxe0,mlx5_0\nrxe0,mlx5_1')"
	run env RDMACTL_SYSFS="$BATS_TEST_TMPDIR/fx/shared-nic" "$RDMACTL" __complete --device=rx
	assert_output --device=rxe0
	# -d after the command completes as before it
	run env RDMACTL_SYSFS="$BATS_TEST_TMPDIR/fx/shared-nic" "$RDMACTL" __complete write 198.18.0.1/kv -d rx
	assert_output rxe0
}

@test "__complete: a command's options, values, files" {
	run "$RDMACTL" __complete register --mem h
	assert_output "$(printf 'host\nhugepage')"
	run "$RDMACTL" __complete register --mem=host --name kv --access ""
	assert_output "$(printf 'ro\nrw\natomic')"
	run "$RDMACTL" __complete write --pattern ""
	assert_output "$(printf 'zero\nseq\nrandom:1')"
	run "$RDMACTL" __complete read -O ""
	assert_output __files
	run "$RDMACTL" __complete help wr
	assert_output write
	run "$RDMACTL" __complete write --siz
	assert_output --size
	run "$RDMACTL" __complete write -- --
	assert_output ""
	run "$RDMACTL" __complete nosuch --
	assert_success
	assert_output ""
}

@test "__complete: device names come from the sysfs root (RDMACTL_SYSFS on a fixture tree)" {
	bash "$ROOT/tests/fixtures/make-sysfs.sh" "$BATS_TEST_TMPDIR/fx" >/dev/null
	# The names are written out from make-sysfs.sh's layout, not listed from the tree.
	run env RDMACTL_SYSFS="$BATS_TEST_TMPDIR/fx/shared-nic" "$RDMACTL" __complete -d ""
	assert_success
	assert_equal "$(sort <<<"$output")" "$(printf 'mlx5_0\nmlx5_1\nrxe0')"
	run env RDMACTL_SYSFS="$BATS_TEST_TMPDIR/fx/shared-nic" "$RDMACTL" __complete --device rx
	assert_output rxe0
	run env RDMACTL_SYSFS="$BATS_TEST_TMPDIR/fx/two-socket-8gpu" "$RDMACTL" __complete -j -d mlx5_
	assert_success
	assert_equal "$(sort <<<"$output")" "$(printf 'mlx5_%s\n' 0 1 2 3 4 5 6 7 8)"
	run env RDMACTL_SYSFS="$BATS_TEST_TMPDIR/nosuch" "$RDMACTL" __complete -d ""
	assert_success
	assert_output ""
}

@test "bash: a partial command, option and value" {
	run bash_complete rdmactl wri
	assert_output write
	run bash_complete rdmactl write --pa
	assert_output --pattern
	run bash_complete rdmactl register --mem hu
	assert_output hugepage
	run bash_complete rdmactl -j ver
	assert_output version
	run bash_complete rdmactl --fo
	assert_output --force
}

@test "bash: path completion where the table says a file" {
	touch "$BATS_TEST_TMPDIR/blob.bin"
	run bash_complete rdmactl write --file "$BATS_TEST_TMPDIR/bl"
	assert_output "$BATS_TEST_TMPDIR/blob.bin"
}

@test "zsh: the script offers what the binary prints" {
	command -v zsh >/dev/null || skip "zsh is not installed"
	# compadd and _files are zle builtins: stand-ins record what they get.
	run env PATH="$BIN_DIR:$PATH" zsh -f -c '
		compadd() { [[ $1 == -- ]] && shift; print -rl -- "$@"; }
		_files() { print -r -- "FILES $*"; }
		fpath=("$1/completions" $fpath)
		autoload -Uz _rdmactl
		words=(rdmactl register --mem h); CURRENT=4; _rdmactl
		words=(rdmactl wri); CURRENT=2; _rdmactl
		words=(rdmactl read --out x); CURRENT=4; _rdmactl' _ "$ROOT"
	assert_success
	assert_output "$(printf 'host\nhugepage\nwrite\nFILES ')"
}

@test "test hooks are parsed but never offered: not in help, not completed" {
	run "$RDMACTL" __complete kvxfer send --cancel
	assert_success
	assert_output ""
	run "$RDMACTL" __complete kvxfer send --ca
	refute_output --partial cancel-request
	run "$RDMACTL" kvxfer send --help
	assert_success
	refute_output --partial cancel
	# the table says what is hidden, for the man page drift test
	run "$RDMACTL" -j help
	assert_success
	[ "$(jq -r '.commands[] | select(.name == "kvxfer") | .options[] | select(.name == "cancel-request") | .hidden' <<<"$output")" = true ]
	[ "$(jq -r '[.commands[].options[] | select(.hidden)] | length' <<<"$output")" -ge 2 ]
	# still parsed: its pair is still checked
	run "$RDMACTL" kvxfer send --layers 2 --kv-heads 1 --head-dim 8 --tokens 4 --connect 1.2.3.4:5 --cancel-request 1
	assert_failure 2
	assert_output --partial "--cancel-request and --cancel-after-layers go together"
}
