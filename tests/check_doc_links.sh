#!/usr/bin/env bash
# Fails when a citation names a page or section of the project's docs that does not exist:
# every `docs/<page>.md#<section>` (and `examples/<page>.md#<section>`) written in code, tests, CMake
# files and pages, and every relative markdown link between pages, must name a file of the
# tree and, after `#`, one of its headings (GitHub's anchor rule: lower case, punctuation
# dropped, spaces to `-`).
#
#   check_doc_links.sh SOURCE_DIR
set -u
cd "$1" || exit 2
perl -e '
  use strict; use warnings;
  my %anchors;
  sub anchors_of {
    my ($f) = @_;
    return $anchors{$f} if exists $anchors{$f};
    my %a; my $in_code = 0;
    if (open(my $h, "<:encoding(UTF-8)", $f)) {
      while (my $l = <$h>) {
        $in_code = !$in_code if $l =~ /^```/;
        next if $in_code || $l !~ /^#{1,6}\s+(.*?)\s*$/;
        my $t = lc $1; $t =~ s/[^\w\- ]//g; $t =~ s/ /-/g; $a{$t} = 1;
      }
    }
    return $anchors{$f} = \%a;
  }
  my ($bad, $seen) = (0, 0);
  my @files = split /\0/, `git ls-files -z -- "*.hpp" "*.cpp" "*.md" "*.txt" "*.cmake" "*.sh" "*.json" 2>/dev/null`;
  @files = split /\0/, `find . -path ./build -prune -o -type f \\( -name "*.hpp" -o -name "*.cpp" -o -name "*.md" -o -name "*.txt" -o -name "*.cmake" -o -name "*.sh" -o -name "*.json" \\) -print0 | sed -z "s|^\\./||"` unless @files;
  die "check_doc_links: no files found\n" unless @files;
  for my $f (@files) {
    open(my $h, "<:encoding(UTF-8)", $f) or next;
    (my $dir = $f) =~ s{[^/]*$}{};
    my $n = 0;
    while (my $l = <$h>) {
      $n++;
      my @refs;
      push @refs, [$1, $2] while $l =~ m{(?<![\w./-])((?:docs|examples)/[\w./-]*?\.md)(?:#([\w-]+))?}g;
      if ($f =~ /\.md$/) {
        while ($l =~ m{\]\(([^)#:\s]*\.md)?(?:#([\w-]+))?\)}g) {
          my ($p, $a) = ($1, $2);
          next if !defined $p && !defined $a;
          my $t = defined $p ? $dir . $p : $f;
          1 while $t =~ s{[^/]+/\.\./}{};
          $t =~ s{^\./}{};
          push @refs, [$t, $a];
        }
      }
      for my $r (@refs) {
        my ($p, $a) = @$r; $seen++;
        if (!-f $p) { print "$f:$n: no such page: $p\n"; $bad++; next; }
        next unless defined $a;
        if (!anchors_of($p)->{$a}) { print "$f:$n: $p has no section #$a\n"; $bad++; }
      }
    }
  }
  print "check_doc_links: $seen references, $bad broken\n";
  exit($bad ? 1 : 0);
'
