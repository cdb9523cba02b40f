# SPDX-License-Identifier: MIT
# bats-support and bats-assert, sourced without a fork: bats sources this
# for every test, and their own load.bash runs dirname once per file, which
# costs about a second a test under the guest's emulation.
for _lib in /usr/lib/bats/bats-support/src/*.bash /usr/lib/bats/bats-assert/src/*.bash; do
	# shellcheck source=/dev/null
	source "$_lib"
done
unset _lib
