#!/usr/bin/env bash
# Fails when a C++ file of the library (config/ actors/ routing/ lifecycle/) that the change
# touches is not formatted as .clang-format says (docs/testing.md#code-style): runs
# `clang-format --dry-run -Werror` on each, which prints every place it would change.
#
#   check_format.sh            the files changed since the default base (below)
#   check_format.sh BASE       the files changed since revision BASE
#   check_format.sh --all      every C++ file of the library
#
# "Changed since BASE" is what `git diff BASE` shows (commits, staged and unstaged edits) and
# the untracked files git does not ignore; deleted files are left out. The default base is the
# merge base with origin/main where origin/main exists, else HEAD~1. Where neither gives a
# base (no git checkout, a shallow clone of one commit) nothing is checked, and it says so.
# CLANG_FORMAT names the binary (default: clang-format on the PATH).
#
# Exit status: 0 clean or nothing to check, 1 a file is not formatted, 2 cannot check (no
# clang-format, a BASE that names no revision).
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
clang_format="${CLANG_FORMAT:-clang-format}"
folders=(config actors routing lifecycle)
is_cpp='\.(hpp|cpp|h|cc|ipp)$'

if ! command -v "$clang_format" >/dev/null; then
  echo "check_format: $clang_format not found (Debian package clang-format)" >&2
  exit 2
fi
in_git=false
git rev-parse --is-inside-work-tree >/dev/null 2>&1 && in_git=true

# The files to check, one a line, relative to the source tree.
files=()
if [[ ${1:-} == --all ]]; then
  what="every C++ file of the library"
  if $in_git; then
    mapfile -t files < <(git ls-files -- "${folders[@]}" | grep -E "$is_cpp")
  else
    mapfile -t files < <(find "${folders[@]}" -type f | grep -E "$is_cpp" | sort)
  fi
else
  base="${1:-}"
  if ! $in_git; then
    echo "check_format: not a git checkout: no base to compare with, nothing checked"
    exit 0
  fi
  if [[ -n $base ]]; then
    if ! git rev-parse --verify -q "$base^{commit}" >/dev/null; then
      echo "check_format: '$base' names no revision" >&2
      exit 2
    fi
  elif git rev-parse --verify -q origin/main >/dev/null \
       && base="$(git merge-base HEAD origin/main 2>/dev/null)"; then
    :
  elif git rev-parse --verify -q 'HEAD~1^{commit}' >/dev/null; then
    base=HEAD~1
  else
    echo "check_format: neither origin/main nor HEAD~1 exists (a clone of one commit?): no base" \
         "to compare with, nothing checked"
    exit 0
  fi
  what="the C++ files of the library changed since $(git rev-parse --short "$base")"
  mapfile -t files < <({ git diff --name-only --diff-filter=d "$base" -- "${folders[@]}"
                         git ls-files --others --exclude-standard -- "${folders[@]}"; } \
                       | grep -E "$is_cpp" | sort -u)
fi

if ((${#files[@]} == 0)); then
  echo "check_format: $what: none, nothing checked"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  "$clang_format" --dry-run -Werror --style=file "$f" || bad=$((bad + 1))
done
echo "check_format: $what: ${#files[@]} checked, $bad not formatted" \
     "(clang-format -i FILE formats one)"
((bad == 0))
