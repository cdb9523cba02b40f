# SPDX-License-Identifier: MIT
# The size limits of the code (issue #24): a function whose body (the lines
# between its opening and closing brace, both at the start of a line, as
# clang-format puts them) runs over 80 lines, and a file over 600 lines, are
# each named on one line; the exit status is 1 when any was.
#   awk -f tests/lib/sizes.awk FILE...
FNR == 1 { start = 0 }
/^\{/ { start = FNR; name = prev }
/^\}/ && start {
	if (FNR - start - 1 > 80) {
		sub(/\(.*/, "", name)
		printf "%s:%d: function %s: %d lines (at most 80)\n", FILENAME, start, name, FNR - start - 1
		bad = 1
	}
	start = 0
}
{ prev = $0; lines[FILENAME] = FNR }
END {
	for (f in lines)
		if (lines[f] > 600) {
			printf "%s: %d lines (at most 600)\n", f, lines[f]
			bad = 1
		}
	exit bad
}
