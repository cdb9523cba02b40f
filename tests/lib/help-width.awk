# SPDX-License-Identifier: MIT
#
# awk -v cmd=NAME -f tests/lib/help-width.awk: read one --help text (as
# printed where stdout is no terminal, wrapped to 80 columns) and print
# what does not fit one 80-column line:
#   NAME: --OPTION: N lines    an option whose help wrapped (its row's text
#                              takes one line; one below a left column too
#                              wide to hold it, as --allow-unauthenticated-
#                              migration's, is its one line)
#   NAME: COMMAND: N lines     a command of the list whose summary wrapped
#   NAME: N columns: LINE      any line wider than 80 columns
# The Arguments section (TARGET's paragraph) is not checked: it is a
# paragraph, not a row.
function flush() {
	if (entry != "" && extra > (on_entry ? 0 : 1))
		printf "%s: %s: %d lines\n", cmd, entry, extra + on_entry
	entry = ""
}
length($0) > 80 { printf "%s: %d columns: %s\n", cmd, length($0), $0 }
/^[A-Z][A-Za-z ]*:$/ {
	flush()
	sec = $0 ~ /[Oo]ptions:$/ ? "options" : $0 == "Commands:" ? "commands" : ""
	next
}
sec == "" || $0 == "" { next }
# a row's text carried on: the line starts blank past the command column
substr($0, 1, 19) ~ /^ *$/ { extra++; next }
{
	flush()
	entry = $0
	sub(/^ +/, "", entry)
	if (sec == "options") {
		if (entry ~ /^-[^-]/)
			sub(/^-[^ ]*, /, "", entry) # the long name of "-x, --name"
		sub(/ .*/, "", entry)
		# the text on the row's own line, from column 34
		on_entry = length($0) >= 34 && substr($0, 33, 1) == " " && substr($0, 34, 1) != " "
	} else {
		sub(/ .*/, "", entry)
		on_entry = 1
	}
	extra = 0
}
END { flush() }
