#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The pairs of C files that call into each other (a circle: A calls B and B
# calls A), read from a build's objects with nm: one line a pair, "A <-> B".
#   tests/lib/call-circles.sh [BUILD]     (default build/; count with | wc -l)
# It reads the objects of libcore's layers and of the commands, the ones
# the program is made of.
set -euo pipefail
build=${1:-build}
find "$build/libcore" "$build/cmds" -path '*/CMakeFiles/*.dir/*' -name '*.c.o' \
	! -path '*_links.dir*' ! -path '*rdmacmds_static*' | sort |
	while read -r o; do
		f=${o#"$build"/}
		f=${f%%/CMakeFiles/*}/${f#*.dir/}
		f=${f#libcore/}
		nm "$o" | awk -v f="${f%.o}" 'NF == 3 && $2 == "T" { print "def", f, $3 }
			$1 == "U" { print "use", f, $2 }'
	done |
	awk '$1 == "def" { def[$3] = $2 } $1 == "use" { use[$2, $3] = 1 }
		END {
			for (k in use) {
				split(k, p, SUBSEP)
				if ((p[2] in def) && def[p[2]] != p[1]) edge[p[1], def[p[2]]] = 1
			}
			for (k in edge) {
				split(k, p, SUBSEP)
				if (p[1] < p[2] && ((p[2], p[1]) in edge)) print p[1] " <-> " p[2]
			}
		}' | sort
