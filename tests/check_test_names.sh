#!/usr/bin/env bash
# Fails when a doctest case name holds a `;`: ctest's test discovery cuts names there, so
# such a case would be registered as pieces that match no case, run nothing and pass
# (docs/caf-notes.md "Test names"). Reads every C++ file under the folders given.
#
#   check_test_names.sh DIR...
set -u
found=$(find "$@" -name '*.cpp' -print0 | xargs -0 perl -0777 -ne '
  while (/TEST_CASE(?:_FIXTURE)?\s*\((?:[^,"]*,)?\s*((?:"(?:[^"\\]|\\.)*"\s*)+)/g) {
    my $name = join("", $1 =~ /"((?:[^"\\]|\\.)*)"/g);
    print "$ARGV: $name\n" if $name =~ /;/;
  }')
if [ -n "$found" ]; then
  echo "check_test_names: test case names with ';' (ctest would run none of them):"
  echo "$found"
  exit 1
fi
count=$(find "$@" -name '*.cpp' -print0 | xargs -0 grep -ho 'TEST_CASE' | wc -l)
echo "check_test_names: $count test cases, no name holds ';'"
