# SPDX-License-Identifier: MIT
# bash completion for rdmactl. Every candidate comes from the binary's own
# command table (rdmactl __complete), so this file names no option.

_rdmactl()
{
	local cur prog line cword
	local -a words
	COMPREPLY=()
	if declare -F _get_comp_words_by_ref >/dev/null; then
		# Keep HOST:PORT/REGION and --opt=value in one word.
		_get_comp_words_by_ref -n =: -c cur -w words -i cword
	else
		words=("${COMP_WORDS[@]}")
		cword=$COMP_CWORD
		cur=${COMP_WORDS[COMP_CWORD]}
	fi
	prog=${words[0]}
	[[ $prog == */* && -x $prog ]] || prog=$(type -P rdmactl) || return 0
	while IFS= read -r line; do
		case $line in
		__files)
			compopt -o filenames 2>/dev/null
			mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -f -- "$cur")
			;;
		__dirs)
			compopt -o filenames 2>/dev/null
			mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -d -- "$cur")
			;;
		*)
			COMPREPLY+=("$line")
			;;
		esac
	done < <("$prog" __complete "${words[@]:1:cword}" 2>/dev/null)
}

complete -F _rdmactl rdmactl
