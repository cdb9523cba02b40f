# SPDX-License-Identifier: MIT
# Drive `rdmactl shell` in a detached tmux session of its own (a private
# tmux server on a socket in the test's temp dir). Every wait is bounded.

shell_start() {
	command -v tmux >/dev/null || skip "tmux is not installed"
	SOCK="$BATS_TEST_TMPDIR/tmux"
	HIST="${HIST:-$BATS_TEST_TMPDIR/history}"
	# The pane stays after the shell ends, to show its exit status.
	tmux -S "$SOCK" -f /dev/null new-session -d -x 200 -y 50 \
		"env INPUTRC=/dev/null TERM=xterm RDMACTL_HISTORY='$HIST' $* '$RDMACTL' $SHELL_GLOBALS shell; echo \"EXITED \$?\"; sleep 600"
	wait_for 'rdmactl> '
}

shell_stop() {
	[[ -n ${SOCK:-} ]] && tmux -S "$SOCK" kill-server 2>/dev/null
	return 0
}

screen() {
	tmux -S "$SOCK" capture-pane -p -J -S -1000
}

# Wait up to ${2:-10} s for text on the screen.
wait_for() {
	local deadline=$((SECONDS + ${2:-10}))
	while ((SECONDS < deadline)); do
		screen | grep -qF -- "$1" && return 0
		sleep 0.1
	done
	echo "timed out waiting for '$1'; the screen:" >&2
	screen >&2
	return 1
}

# Type a line and wait for the next prompt after it.
type_line() {
	local before
	before=$(screen | grep -c 'rdmactl> ')
	tmux -S "$SOCK" send-keys -l -- "$1"
	tmux -S "$SOCK" send-keys Enter
	wait_prompts $((before + 1))
}

# Wait until the screen shows n prompts.
wait_prompts() {
	local deadline=$((SECONDS + ${2:-10}))
	while ((SECONDS < deadline)); do
		(($(screen | grep -c 'rdmactl> ') >= $1)) && return 0
		sleep 0.1
	done
	echo "timed out waiting for prompt $1; the screen:" >&2
	screen >&2
	return 1
}

keys() {
	tmux -S "$SOCK" send-keys "$@"
}

# Type text without Enter.
type_text() {
	tmux -S "$SOCK" send-keys -l -- "$1"
}

# The line the cursor is on (what is being typed now), not older scrollback.
cursor_line() {
	local y
	y=$(tmux -S "$SOCK" display -p '#{cursor_y}')
	tmux -S "$SOCK" capture-pane -p -N -S "$y" -E "$y"
}

# Wait up to ${2:-10} s until the cursor's line is exactly $1 (blanks after
# it aside: a trailing blank in $1 is required).
wait_cursor_line() {
	local deadline=$((SECONDS + ${2:-10})) line rest
	while ((SECONDS < deadline)); do
		line=$(cursor_line)
		if [[ "$line" == "$1"* ]]; then
			rest=${line#"$1"}
			[[ "$rest" =~ ^\ *$ ]] && return 0
		fi
		sleep 0.1
	done
	echo "timed out waiting for the cursor's line to be '$1'; it is '$line'; the screen:" >&2
	screen >&2
	return 1
}
