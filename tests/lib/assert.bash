# SPDX-License-Identifier: MIT
# bats-support and bats-assert, sourced without a fork: bats sources this
# for every test, and their own load.bash runs dirname once per file, which
# costs about a second a test under the guest's emulation.
for _lib in /usr/lib/bats/bats-support/src/*.bash /usr/lib/bats/bats-assert/src/*.bash; do
	# shellcheck source=/dev/null
	source "$_lib"
done
unset _lib

# Every -j document rdmactl prints in a test is also recorded (the
# RDMACTL_TEST_JSON_LOG hook of cmds/framework/output.c), in a folder per
# test file under the tier's $RDMACTL_TEST_JSON_DOCS (tests/lib/bats-each.sh
# sets it for a whole tier; else this bats run's folder), for the tier's last
# file, zz-json-schemas.bats, to check against schemas/ (tests/lib/schemas.bash).
if [[ -n "${RDMACTL_TEST_JSON_DOCS:-${BATS_RUN_TMPDIR:-}}" ]]; then
	export RDMACTL_TEST_JSON_LOG=${RDMACTL_TEST_JSON_DOCS:-$BATS_RUN_TMPDIR/json-docs}/${BATS_TEST_FILENAME##*/}
fi
