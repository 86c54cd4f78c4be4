#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Checks that the repository documents itself (docs/style.md, "House rules
# enforced by a script"):
#   1. no file refers to a path outside the repository (the project's
#      former research notes, the folder beside the repository, absolute machine paths);
#   2. every relative link in a Markdown file resolves to a file or
#      directory of the repository, and every #anchor into a Markdown file
#      to one of its headings;
#   3. every protocol rule ID cited anywhere (R-9.5, or a section R-9) is
#      defined in docs/protocol.md.
# Needs only bash, git, grep, sed, awk (POSIX, no intervals) and tr. Run from anywhere; exits
# non-zero, listing every finding, if any check fails. scripts/vet.sh runs
# it.
set -u
cd "$(dirname "$0")/.."

protocol=docs/protocol.md
fail=0
report() { # report TITLE LINES...
	if [ -n "$2" ]; then
		printf '%s:\n%s\n\n' "$1" "$2"
		fail=1
	fi
}

# Files of the work tree: tracked, and untracked but not ignored, that
# exist (a file deleted but not committed yet is skipped).
files() { # files [PATHSPEC...]
	git ls-files --cached --others --exclude-standard -- "$@" |
		sort -u | while IFS= read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done
}

# grep_files ERE [GREP OPTIONS...]: grep -n -E over the text files of the
# work tree, this script excepted (it spells the patterns).
grep_files() {
	local re=$1
	shift
	files | grep -v -x 'scripts/checkdocs.sh' | tr '\n' '\0' |
		xargs -0 grep -n -I -E "$@" -e "$re" 2>/dev/null
}

# 1. References to paths outside the repository.
report "reference to a file outside the repository (cite docs/protocol.md, docs/style.md, a gRFC or an xDS protocol section instead)" \
	"$(grep_files '(\.\./shared|/work/|(^|[^[:alnum:]_/.-])(RULES|STYLE|DESIGN)\.md)')"

# slugs FILE: the GitHub anchors of FILE's headings, one per line
# (lowercase; punctuation other than '-' and '_' dropped; spaces become
# '-'), outside fenced code blocks.
slugs() {
	awk '/^[ ]?[ ]?[ ]?(```|~~~)/ { fence = !fence; next } !fence && /^##?#?#?#?#?[ \t]/ { print }' "$1" |
		sed -E -e 's/^#{1,6}[ \t]+//' -e 's/[ \t]+#+[ \t]*$//' |
		tr 'A-Z' 'a-z' |
		sed -e 's/[][!"#$%&'"'"'()*+,./:;<=>?@\\^`{|}~]//g' -e 's/ /-/g'
}

# links FILE: "LINE<TAB>TARGET" for every inline link or image and every
# link reference definition of FILE, outside fenced code blocks and code
# spans.
links() {
	awk '
		/^[ ]?[ ]?[ ]?(```|~~~)/ { fence = !fence; next }
		fence { next }
		{
			line = $0
			gsub(/``[^`]*``/, "", line)
			gsub(/`[^`]*`/, "", line)
			if (match(line, /^[ ]?[ ]?[ ]?\[[^]]+\]:[ \t]*[^ \t]+/)) {
				def = substr(line, RSTART, RLENGTH)
				sub(/^[ ]?[ ]?[ ]?\[[^]]+\]:[ \t]*/, "", def)
				gsub(/^<|>$/, "", def)
				print NR "\t" def
				next
			}
			while (match(line, /\]\([^) \t]+/)) {
				print NR "\t" substr(line, RSTART + 2, RLENGTH - 2)
				line = substr(line, RSTART + RLENGTH)
			}
		}' "$1"
}

# 2. Relative links in Markdown files.
bad_links=$(
	files '*.md' | while IFS= read -r md; do
		dir=$(dirname "$md")
		links "$md" | while IFS=$'\t' read -r line target; do
			case $target in
			[a-zA-Z]*:*) continue ;; # https:, mailto:, …
			/*)
				echo "$md:$line: $target: absolute path"
				continue
				;;
			esac
			path=${target%%#*}
			path=${path%%\?*}
			anchor=
			case $target in *'#'*) anchor=${target#*#} ;; esac
			if [ -z "$path" ]; then
				dest=$md
			else
				dest=$dir/$path
				if [ ! -e "$dest" ]; then
					echo "$md:$line: $target: no such file or directory"
					continue
				fi
				case $(cd "$(dirname "$dest")" && pwd -P)/ in
				"$(pwd -P)"/*) ;;
				*)
					echo "$md:$line: $target: outside the repository"
					continue
					;;
				esac
			fi
			if [ -n "$anchor" ] && [ -f "$dest" ] && [[ $dest == *.md ]]; then
				slugs "$dest" | grep -q -x -F -e "$anchor" ||
					echo "$md:$line: $target: no heading with anchor #$anchor"
			fi
		done
	done
)
report "Markdown link that does not resolve" "$bad_links"

# 3. Rule IDs. Defined: "**R-n.m**" items and "## R-n " sections of
# docs/protocol.md. Cited: R-n.m or R-n anywhere, not inside a word.
if [ ! -f "$protocol" ]; then
	report "rule IDs" "$protocol: missing"
else
	defined=$(
		{
			grep -o -E '\*\*R-[0-9]+\.[0-9]+\*\*' "$protocol" | tr -d '*'
			grep -o -E '^## R-[0-9]+ ' "$protocol" | sed -e 's/^## //' -e 's/ $//'
		} | sort -u
	)
	undefined=$(
		grep_files '(^|[^[:alnum:]_-])R-[0-9]+(\.[0-9]+)?' -o |
			sed -E -e 's/^([^:]*:[0-9]+:).*(R-[0-9]+(\.[0-9]+)?)$/\1\2/' |
			while IFS= read -r hit; do
				id=${hit##*:}
				grep -q -x -F -e "$id" <<<"$defined" || echo "$hit: $id is not defined in $protocol"
			done
	)
	report "rule ID not defined in $protocol" "$undefined"
fi

exit $fail
