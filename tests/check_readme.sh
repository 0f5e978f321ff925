#!/usr/bin/env bash
# Fails when README.md no longer matches the files it shows (docs/testing.md#the-test-suite):
#   - a fenced block introduced as a file's whole content ("`examples/hello/main.cpp`, the
#     whole program (33 lines; ...)" right before the fence), in README.md or a page of docs/,
#     must equal that file byte for byte (but for one trailing newline), and a "(N lines"
#     stated there must be the file's line count;
#   - a command of a ```sh block of the README (or quoted in its prose) that starts with
#     `./cafmesh` must use a subcommand that the case statement of the `cafmesh` script
#     accepts, and one that runs `./build/examples/...` must name an executable that
#     examples/CMakeLists.txt or examples/*/CMakeLists.txt declares in that directory
#     (add_executable, cafmesh_add_test_suite; foreach items expanded); other commands
#     (`cmake --install build --prefix ...`) are left alone;
#   - `.ci/run` runs exactly the README's test command (its `./cafmesh test` line);
#   - README.md has at most 150 lines.
# One line per mismatch, naming the README (or page) line and the file.
#
#   check_readme.sh SOURCE_DIR
set -u
cd "$1" || exit 2
perl -e '
  use strict; use warnings;
  my $max_lines = 150;
  my ($bad, $whole, $commands) = (0, 0, 0);
  sub fail { print "$_[0]\n"; $bad++; }
  sub slurp { my ($f) = @_; open(my $h, "<:raw", $f) or return undef; local $/; my $t = <$h>; return $t; }
  sub lines_of { my ($t) = @_; return 0 if $t eq ""; my $n = () = $t =~ /\n/g; $n++ unless $t =~ /\n\z/; return $n; }
  sub clip { my ($s) = @_; $s =~ s/\r$//; $s =~ s/^\s+//; return length($s) > 60 ? substr($s, 0, 57) . "..." : $s; }

  # Fenced blocks of a markdown file: [line of the opening fence, info string, [lines], indent].
  sub blocks_of {
    my ($text) = @_;
    my @lines = split /\n/, $text, -1;
    pop @lines if @lines && $lines[-1] eq "";
    my (@blocks, $open);
    for my $i (0 .. $#lines) {
      my $l = $lines[$i];
      if (!$open) {
        if ($l =~ /^( {0,3})(`{3,}|~{3,})\s*([^\s`]*)/) {
          $open = { line => $i + 1, indent => length $1, fence => $2, info => lc $3, body => [] };
        }
      } elsif ($l =~ /^ {0,3}(`{3,}|~{3,})\s*$/ && substr($1, 0, 1) eq substr($open->{fence}, 0, 1)
               && length $1 >= length $open->{fence}) {
        push @blocks, $open; undef $open;
      } else {
        (my $b = $l) =~ s/^ {0,$open->{indent}}//;
        push @{$open->{body}}, $b;
      }
    }
    return (\@blocks, \@lines);
  }

  # ---- 1. a block shown as the whole of a file equals the file ----
  my @pages = ("README.md");
  push @pages, sort split /\0/, `find docs -name "*.md" -print0 2>/dev/null` if -d "docs";
  my ($readme_blocks, $readme_lines);
  for my $page (@pages) {
    my $text = slurp($page);
    if (!defined $text) { fail("$page: no such file"); next; }
    my ($blocks, $lines) = blocks_of($text);
    ($readme_blocks, $readme_lines) = ($blocks, $lines) if $page eq "README.md";
    (my $dir = $page) =~ s{[^/]*$}{};
    for my $b (@$blocks) {
      # The paragraph right before the fence (one blank line between them allowed).
      my $i = $b->{line} - 2;
      $i-- if $i >= 0 && $lines->[$i] =~ /^\s*$/;
      my @para;
      while ($i >= 0 && $lines->[$i] !~ /^\s*$/ && $lines->[$i] !~ /^\s*(#|```|~~~)/) { unshift @para, [$i + 1, $lines->[$i]]; $i--; }
      next unless @para;
      my $intro = join " ", map { $_->[1] } @para;
      next unless $intro =~ /`([^`\s]+)`\s*,?\s*(?:is\s+)?the\s+whole\b(.*)/;
      my ($shown, $rest) = ($1, $2);
      my ($intro_line) = map { $_->[0] } grep { index($_->[1], "`$shown`") >= 0 } @para;
      $intro_line //= $para[0][0];
      $whole++;
      my $file = -f $shown ? $shown : -f "$dir$shown" ? "$dir$shown" : undef;
      if (!defined $file) { fail("$page:$intro_line: shows the whole of $shown, which does not exist"); next; }
      my $content = slurp($file);
      my $n = lines_of($content);
      if ($rest =~ /\((\d+)\s+lines\b/ && $1 != $n) {
        fail("$page:$intro_line: says $file has $1 lines; it has $n");
      }
      (my $want = $content) =~ s/\n\z//;
      my $got = join "\n", @{$b->{body}};
      next if $got eq $want;
      my @w = split /\n/, $want, -1; my @g = @{$b->{body}};
      my $k = 0; $k++ while $k < @w && $k < @g && $w[$k] eq $g[$k];
      my $at = $b->{line} + 1 + $k;
      if ($k >= @g) {
        fail("$page:$at: the block showing the whole of $file ends after $k lines; the file goes on at its line " . ($k + 1) . ": \"" . clip($w[$k]) . "\"");
      } elsif ($k >= @w) {
        fail("$page:$at: the block showing the whole of $file has lines past the file\x27s end ($n lines): \"" . clip($g[$k]) . "\"");
      } else {
        fail("$page:$at: the block showing the whole of $file differs from the file at its line " . ($k + 1) . ": block \"" . clip($g[$k]) . "\", file \"" . clip($w[$k]) . "\"");
      }
    }
  }
  if (!$readme_blocks) { print "check_readme: README.md missing\n"; exit 1; }

  # ---- 2. the commands of the sh blocks of the README ----
  # The subcommands the entry script accepts: the labels of its top-level case statement.
  my %subcommands; my $script = slurp("cafmesh");
  if (!defined $script) { fail("cafmesh: no such file (the README runs ./cafmesh)"); }
  else {
    # A label opens the case and follows each `;;` of the outermost case.
    my ($depth, $label_next) = (0, 0);
    for my $l (split /\n/, $script) {
      next if $l =~ /^\s*(#|$)/;
      if ($l =~ /^\s*case\b.*\bin\s*$/) { $label_next = 1 if ++$depth == 1; next; }
      if ($l =~ /^\s*esac\b/) { $depth--; next; }
      next unless $depth == 1;
      if ($label_next && $l =~ /^\s*\(?\s*([^()]*?)\s*\)/) {
        for my $w (split /\s*\|\s*/, $1) { $w =~ s/^["\x27]|["\x27]$//g; $subcommands{$w} = 1 unless $w eq "*"; }
      }
      $label_next = $l =~ /;;&?\s*$|;&\s*$/ ? 1 : 0;
    }
    fail("cafmesh: no case statement of subcommands found") unless %subcommands;
  }
  my $accepted = join ", ", sort keys %subcommands;

  # The executables examples/ declares, by the build directory they land in.
  my %targets;   # "build/examples[/sub]" -> [name or pattern, ...]
  for my $cm ("examples/CMakeLists.txt", sort glob("examples/*/CMakeLists.txt")) {
    my $t = slurp($cm); next unless defined $t;
    (my $out = $cm) =~ s{/CMakeLists\.txt$}{}; $out = "build/$out";
    my @loops;
    for my $l (split /\n/, $t) {
      $l =~ s/(^|\s)#.*$//;
      if ($l =~ /^\s*foreach\s*\(\s*(\w+)\s+(?:IN\s+ITEMS\s+)?([^)]*)\)/i) { push @loops, [$1, [split " ", $2]]; next; }
      if ($l =~ /^\s*endforeach\b/i) { pop @loops; next; }
      next unless $l =~ /^\s*(?:add_executable|cafmesh_add_test_suite)\s*\(\s*"?([^\s)"]+)"?\s*(\w*)/i;
      my ($name, $kind) = ($1, $2);
      next if $kind =~ /^(IMPORTED|ALIAS)$/;
      my @names = ($name);
      for my $lp (reverse @loops) {
        my ($var, $items) = @$lp;
        @names = map { my $n = $_; $n =~ /\$\{\Q$var\E\}/ ? map { (my $x = $n) =~ s/\$\{\Q$var\E\}/$_/g; $x } @$items : ($n) } @names;
      }
      push @{$targets{$out}}, @names;
    }
  }
  sub declared {
    my ($dir, $bin) = @_;
    for my $n (@{$targets{$dir} // []}) {
      my $re = join "[\\w.+-]+", map { quotemeta } split /\$\{[^}]*\}/, $n, -1;
      return 1 if $bin =~ /^$re$/;
    }
    return 0;
  }

  # One command: returns its subcommand (or "") when it runs ./cafmesh, and the command.
  sub check_command {
    my ($ln, $cmd) = @_;
    $cmd =~ s/^\s*(?:\$\s+)?//; $cmd =~ s/\s+$//;
    $cmd =~ s/^(?:sudo\s+|\w+=\S*\s+)+//;
    if ($cmd =~ m{^\./cafmesh(?:\s+(\S+))?(?:\s|$)}) {
      $commands++;
      my $sub = $1;
      if (defined $sub && %subcommands && !$subcommands{$sub}) {
        fail("README.md:$ln: \"$cmd\": the cafmesh script accepts no subcommand \"$sub\" (it accepts $accepted)");
      }
      return ($sub // "", $cmd);
    }
    if ($cmd =~ m{^((?:\./)?build/examples/\S*)}) {
      $commands++;
      my $path = $1; $path =~ s{/+$}{};
      my ($dir, $bin) = $path =~ m{^(?:\./)?(.*)/([^/]+)$};
      return undef if declared($dir, $bin);
      my @elsewhere = grep { declared($_, $bin) } sort keys %targets;
      my $cm = $dir eq "build/examples" ? "examples/CMakeLists.txt" : ($dir =~ s{^build/}{}r) . "/CMakeLists.txt";
      fail("README.md:$ln: \"$path\": $cm declares no executable $bin" .
           (@elsewhere ? " (it is built in $elsewhere[0]/)" : ""));
    }
    return undef;
  }

  my ($test_cmd, $test_line, %in_block);
  for my $b (@$readme_blocks) {
    $in_block{$_} = 1 for $b->{line} .. $b->{line} + @{$b->{body}} + 1;
    next unless $b->{info} =~ /^(sh|bash|shell|console|shell-session)$/;
    my $ln = $b->{line};
    for my $l (@{$b->{body}}) {
      $ln++;
      (my $c = $l) =~ s/(^|\s)#.*$//;
      for my $cmd (split /\s*(?:&&|\|\||;)\s*/, $c) {
        my ($sub, $run) = check_command($ln, $cmd);
        if (defined $sub && $sub eq "test" && !defined $test_cmd) { ($test_cmd = $run) =~ s/\s+/ /g; $test_line = $ln; }
      }
    }
  }
  # The same commands quoted in the prose of the README (`./cafmesh test -L integration`).
  for my $i (0 .. $#$readme_lines) {
    next if $in_block{$i + 1};
    check_command($i + 1, $1) while $readme_lines->[$i] =~ m{`((?:\./cafmesh|(?:\./)?build/examples/)[^`]*)`}g;
  }

  # ---- 3. .ci/run runs exactly the test command of the README ----
  if (!defined $test_cmd) {
    fail("README.md: no ```sh block shows the test command (./cafmesh test), which .ci/run must run");
  } else {
    my $ci = slurp(".ci/run");
    if (!defined $ci) { fail(".ci/run: no such file (the README says CI runs $test_cmd, README.md:$test_line)"); }
    else {
      my ($ln, $runs) = (0, 0);
      for my $l (split /\n/, $ci) {
        $ln++;
        (my $c = $l) =~ s/(^|\s)#.*$//;
        for my $cmd (split /\s*(?:&&|\|\||;)\s*/, $c) {
          $cmd =~ s/^\s+//; $cmd =~ s/\s+$//; $cmd =~ s/^exec\s+//; $cmd =~ s/\s+/ /g;
          next unless $cmd =~ m{^(?:(?:bash|sh)\s+)?(?:\S*/)?cafmesh(?:\s|$)};
          $runs++;
          fail(".ci/run:$ln: runs \"$cmd\", not the README\x27s test command \"$test_cmd\" (README.md:$test_line)")
            unless $cmd eq $test_cmd;
        }
      }
      fail(".ci/run: never runs the README\x27s test command \"$test_cmd\" (README.md:$test_line)") unless $runs;
    }
  }

  # ---- 4. the README stays short ----
  my $n = @$readme_lines;
  fail("README.md:$n: $n lines, more than the $max_lines a README may have") if $n > $max_lines;

  print "check_readme: README.md $n lines, $whole whole-file blocks, $commands commands, $bad mismatches\n";
  exit($bad ? 1 : 0);
'
