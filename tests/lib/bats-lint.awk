# SPDX-License-Identifier: MIT
#
# awk -f tests/lib/bats-lint.awk FILE...: find, in the tests (@test) and
# functions of bats files, assertions that can never fail a test. Under
# bats (set -e) a failing command fails the test only where errexit applies:
#   - in an AND list `A && B` only B, the command after the last `&&`:
#     `[ "$a" = 1 ] && [ "$b" = 1 ]` in the middle of a test lets any $a
#     through;
#   - a pipeline negated with `!` never: `! grep -q x f` checks nothing
#     (bats' `run ! CMD` does);
# except as the last command of the test or function, whose status is its
# own. Such a list is flagged unless it is the last top-level command, its
# last command is an action rather than a check (break, return, echo,
# fail, an assignment ...: `[ -n "$x" ] && break` is a condition, not an
# assertion), or it ends in `|| ...` (`A && B || fail ...` fails).
# Conditions of if, elif, while and until are not assertions.
#
# Prints FILE:LINE: WHAT: THE LINE for each, and exits 1 when it found any.
# A line with the comment "# lint: not an assertion" is left alone.
#
# It reads the shell the way the tests here are written: a test or function
# starts with a line ending in "{" at column 0 (`@test "..." {`, `name() {`)
# and ends at a "}" in column 0; within it quotes, $(...), (...), ((...)),
# [[...]], ${...}, comments and here-documents are followed.

function reset_stmt() {
	ops = ""
	seg_word = ""
	seg_neg = 0
	first_neg = 0
	cond = 0
	stmt_line = 0
	stmt_text = ""
	want_word = 1
	nwords = 0
}

# end_stmt: record the statement just read (if any)
function end_stmt() {
	if (stmt_line) {
		n_st++
		st_line[n_st] = stmt_line
		st_text[n_st] = stmt_text
		st_depth[n_st] = depth
		st_ops[n_st] = ops
		st_last[n_st] = seg_word
		st_neg[n_st] = first_neg
		st_cond[n_st] = cond
		st_ok[n_st] = (stmt_text ~ /# lint: not an assertion/)
	}
	reset_stmt()
}

function is_action(w) {
	if (w ~ /^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=/)
		return 1 # an assignment
	return (w in actions)
}

# a word at command position
function command_word(w) {
	if (w == "!") {
		if (ops == "")
			first_neg = 1
		return 0 # the command is the next word
	}
	nwords++
	if (w == "if" || w == "elif" || w == "while" || w == "until") {
		if (w != "elif")
			depth++
		cond = 1
		return 0 # the condition's first command follows
	}
	if (w == "for" || w == "case" || w == "select") {
		depth++
		cond = 1
		return 1
	}
	if (w == "then" || w == "do" || w == "else") {
		end_stmt()
		return 2 # a command follows
	}
	if (w == "fi" || w == "done" || w == "esac") {
		end_stmt()
		depth--
		return 1
	}
	if (w == "{") {
		end_stmt()
		depth++
		return 2
	}
	if (w == "}") {
		end_stmt()
		depth--
		return 1
	}
	if (w == "common_teardown")
		calls_common = 1
	seg_word = w
	return 1
}

function flush_word() {
	if (word != "") {
		if (want_word) {
			r = command_word(word)
			want_word = (r != 1)
		}
		word = ""
	}
}

function push(c) { ctx[++sp] = c }
function pop() { if (sp > 0) sp-- }

function report(i, what) {
	printf "%s:%d: %s: %s\n", FILENAME, st_line[i], what, st_text[i]
	found++
}

# end_body: check the statements of the test or function that just ended
function end_body(   i, last) {
	end_stmt()
	last = 0
	for (i = 1; i <= n_st; i++)
		if (st_depth[i] == 0)
			last = i
	for (i = 1; i <= n_st; i++) {
		if (st_cond[i] || st_ok[i] || (i == last && st_depth[i] == 0))
			continue
		if (st_ops[i] ~ /&$/ && !is_action(st_last[i]))
			report(i, "a failure before \"&&\" does not fail the test here (make each check its own command, or end the list with \"|| false\")")
		else if (st_neg[i] && st_ops[i] == "")
			report(i, "a check negated with \"!\" does not fail the test here (use \"run ! ...\" or \"... && false\" or \"|| false\")")
	}
	n_st = 0
	if (fname == "teardown" && !calls_common) {
		printf "%s:%d: teardown does not call common_teardown (tests/lib/teardown.bash), which stops what the test started and fails on sanitizer reports: %s\n", FILENAME, body_line, body_text
		found++
	}
}

BEGIN {
	n = split("break continue return exit skip fail echo printf true false : local declare " \
		"export readonly sleep kill wait cat rm mkdir touch cd set unset shift trap eval " \
		"load source . a2a_dump mc_dump dump", a, " ")
	for (i = 1; i <= n; i++)
		actions[a[i]] = 1
	found = 0
}

FNR == 1 {
	if (inbody)
		end_body()
	inbody = 0
	sp = 0
	heredoc = ""
	depth = 0
	n_st = 0
	reset_stmt()
}

# here-document bodies
heredoc != "" {
	line = $0
	if (strip_tabs)
		sub(/^\t+/, "", line)
	if (line == heredoc)
		heredoc = ""
	next
}

!inbody {
	if ($0 ~ /^(@test .*|function [A-Za-z_][A-Za-z0-9_:-]*.*|[A-Za-z_][A-Za-z0-9_:-]*[ \t]*\(\)[ \t]*)\{[ \t]*$/) {
		inbody = 1
		fname = $0
		sub(/^function[ \t]+/, "", fname)
		sub(/[ \t]*(\(\))?[ \t]*\{[ \t]*$/, "", fname)
		body_line = FNR
		body_text = $0
		calls_common = 0
		sp = 0
		depth = 0
		n_st = 0
		word = ""
		reset_stmt()
	}
	next
}

sp == 0 && depth <= 0 && /^}/ {
	flush_word()
	end_body()
	inbody = 0
	next
}

{
	line = $0
	len = length(line)
	cont = 0
	for (p = 1; p <= len; p++) {
		c = substr(line, p, 1)
		top = sp ? ctx[sp] : ""
		if (top == "Q") { # '...'
			if (c == "'")
				pop()
			continue
		}
		if (top == "D") { # "..."
			if (c == "\\") { p++; continue }
			if (c == "\"") { pop(); continue }
			if (c == "$" && substr(line, p + 1, 2) == "((") { push("A"); apar = 0; p += 2; continue }
			if (c == "$" && substr(line, p + 1, 1) == "(") { push("C"); p++; continue }
			if (c == "$" && substr(line, p + 1, 1) == "{") { push("P"); p++; continue }
			if (c == "`") { push("B"); continue }
			continue
		}
		if (top == "B") {
			if (c == "\\") { p++; continue }
			if (c == "`")
				pop()
			continue
		}
		if (top == "A") { # ((...)) and $((...))
			if (c == "(") apar++
			else if (c == ")") {
				if (apar > 0) apar--
				else if (substr(line, p + 1, 1) == ")") { pop(); p++ }
			}
			continue
		}
		if (top == "T") { # [[ ... ]]
			if (c == "'") { push("Q"); continue }
			if (c == "\"") { push("D"); continue }
			if (c == "\\") { p++; continue }
			if (c == "$" && substr(line, p + 1, 1) == "(") { push("C"); p++; continue }
			if (c == "]" && substr(line, p + 1, 1) == "]") { pop(); p++ }
			continue
		}
		# code: the body itself (sp == 0), $(...), (...), ${...}
		if (c !~ /[ \t]/ && c != "#")
			trail = 0
		if (sp == 0 && c !~ /[ \t]/ && !stmt_line && !(c == "#" && word == "")) { stmt_line = FNR; stmt_text = line }
		if (c == "\\") {
			if (p == len) { cont = 1; break }
			if (sp == 0) word = word substr(line, p, 2)
			p++
			continue
		}
		if (c == "'" || c == "\"") {
			push(c == "'" ? "Q" : "D")
			if (sp == 1) word = word "q"
			continue
		}
		if (c == "`") { push("B"); continue }
		if (c == "$" && substr(line, p + 1, 2) == "((") { push("A"); apar = 0; p += 2; if (sp == 1) word = word "$"; continue }
		if (c == "$" && substr(line, p + 1, 1) == "(") { push("C"); p++; if (sp == 1) word = word "$"; continue }
		if (c == "$" && substr(line, p + 1, 1) == "{") { push("P"); p++; if (sp == 1) word = word "$"; continue }
		if (top == "P") {
			if (c == "}")
				pop()
			continue
		}
		if (c == "#" && (p == 1 || substr(line, p - 1, 1) ~ /[ \t;&|(]/) && word == "")
			break # a comment
		if (c == "(") {
			if (sp == 0 && word == "" && want_word && substr(line, p + 1, 1) == "(") {
				if (!stmt_line) { stmt_line = FNR; stmt_text = line }
				seg_word = "(("
				want_word = 0
				push("A"); apar = 0; p++
				continue
			}
			if (sp == 0 && word ~ /=$/) { push("S"); continue } # an array
			push("S")
			continue
		}
		if (c == ")") {
			if (sp > 0)
				pop()
			continue # (a case pattern's ")" at the top)
		}
		if (sp > 0) {
			if (c == "<" && substr(line, p + 1, 1) == "<" && substr(line, p + 2, 1) != "<")
				p = heredoc_start(line, p)
			continue
		}
		# the body's own level
		if (c == "<" && substr(line, p + 1, 1) == "<" && substr(line, p + 2, 1) != "<") {
			flush_word()
			p = heredoc_start(line, p)
			continue
		}
		if (c == "[" && substr(line, p + 1, 1) == "[" && word == "") {
			if (!stmt_line) { stmt_line = FNR; stmt_text = line }
			if (want_word) { seg_word = "[["; want_word = 0 }
			push("T")
			p++
			continue
		}
		if (c == " " || c == "\t") {
			flush_word()
			continue
		}
		if (c == "&" && substr(line, p + 1, 1) == "&") {
			flush_word()
			ops = ops "&"
			want_word = 1
			trail = 1
			p++
			continue
		}
		if (c == "|" && substr(line, p + 1, 1) == "|") {
			flush_word()
			ops = ops "|"
			want_word = 1
			trail = 1
			p++
			continue
		}
		if (c == "|") {
			flush_word()
			want_word = 1
			trail = 1
			continue
		}
		if (c == "&" && substr(line, p + 1, 1) == ">") { # &>FILE
			flush_word()
			p++
			continue
		}
		if (c == ";" || c == "&") {
			flush_word()
			end_stmt()
			continue
		}
		if (c == ">" || c == "<") {
			flush_word()
			if (substr(line, p + 1, 1) == "&")
				p++ # >&2, <&3
			continue
		}
		if (!stmt_line) { stmt_line = FNR; stmt_text = line }
		word = word c
	}
	if (sp == 0 && !cont) {
		flush_word()
		# a list goes on after a trailing && or || (or |)
		if (!trail)
			end_stmt()
	}
}

# heredoc_start LINE P: note the here-document that starts at P; return
# the position of its word's last character
function heredoc_start(line, p,   rest, w) {
	rest = substr(line, p + 2)
	strip_tabs = 0
	if (substr(rest, 1, 1) == "-") { strip_tabs = 1; rest = substr(rest, 2) }
	match(rest, /^[ \t]*/)
	rest = substr(rest, RLENGTH + 1)
	match(rest, /^['"]?[A-Za-z_][A-Za-z0-9_]*['"]?/)
	if (RSTART == 0)
		return p + 1
	w = substr(rest, 1, RLENGTH)
	gsub(/['"]/, "", w)
	heredoc = w
	return p + 1 + (length(line) - p - 1 - length(rest)) + RLENGTH
}

END {
	if (inbody)
		end_body()
	exit found ? 1 : 0
}
