#!/usr/bin/env bash
# Keeps the floors (STYLE 14): fails when a target imports a target on a higher floor, or when two folders inside
# one target refer to each other both ways. A folder refers to another when its code names a type (or a top-level
# function) that the other declares at the top level of one of its files: an approximation by names, comments and
# string literals left out, which the compiler completes for the targets themselves.
# Usage: scripts/check-layers.sh [-v]   (-v lists every folder→folder reference with the names behind it)
set -euo pipefail
cd "$(dirname "$0")/.."

# The floors, lowest first. A target may import only targets on a lower floor (and the C modules below them all).
floors="CSharepipeShims CMagic CSQLite CCrypto CPQ CMicroHTTPD
SharepipeSystem SharepipeLedger SharepipeSpool SharepipeIngest SharepipeDaemon SharepipeScenario SharepipeCore
SharepipeExtensionKit UniformTypeIdentifiers MobileCoreServices SharepipeTesting sharepipe"

# The engine reads no environment (STYLE 14: faults are injected, not read) except this documented configuration:
# SHAREPIPE_FS_FALLBACKS (docs/spool.md), systemd's STATE_DIRECTORY, and the environment an exec processor inherits.
engine="Sources/SharepipeSystem Sources/SharepipeLedger Sources/SharepipeSpool Sources/SharepipeIngest Sources/SharepipeDaemon"
allowed="Spool/FileSystemCapabilities.swift|Spool/Spool.swift|Consumer/ExecProcessor.swift"
# shellcheck disable=SC2086
if reads=$(grep -rnE 'getenv\(|ProcessInfo\.processInfo\.environment' $engine | grep -vE "($allowed):"); then
    echo "check-layers: the engine reads the environment (inject the value at construction instead):" >&2
    echo "$reads" >&2
    exit 1
fi

FLOORS="$floors" exec perl -e '
use strict; use warnings;
my $verbose = grep { $_ eq "-v" } @ARGV;
my %rank; my $r = 0; for my $f (split /\n/, $ENV{FLOORS}) { $rank{$_} = $r for split " ", $f; $r++ }
my @files = split /\0/, `find Sources -name "*.swift" -print0`;
my (%declared, %text, %where, $failed);
for my $file (sort @files) {
    my ($target, $rest) = $file =~ m{^Sources/([^/]+)/(.*)$} or next;
    my $folder = $rest =~ m{^([^/]+)/} ? $1 : ".";
    open my $in, "<", $file or die "$file: $!"; local $/; my $code = <$in>; close $in;
    $code =~ s{/\*.*?\*/}{}gs; $code =~ s{//[^\n]*}{}g; $code =~ s{"(?:\\.|[^"\\\n])*"}{""}g;
    while ($code =~ /^import\s+(?:\w+\s+)?(\w+)/mg) {
        my $imported = $1;
        next unless exists $rank{$imported};
        die "check-layers: target $target is not in the list of floors\n" unless exists $rank{$target};
        if ($rank{$imported} >= $rank{$target} && $imported ne $target) {
            print "check-layers: $file imports $imported, which is not on a lower floor than $target\n"; $failed = 1;
        }
    }
    while ($code =~ /^(?:(?:public|package|internal|fileprivate|private|final|indirect|\@\w+)\s+)*
                     (?:class|struct|enum|protocol|actor|typealias|func)\s+([A-Za-z_]\w*)/mgx) {
        $declared{$target}{$1} = $folder;
    }
    $text{$target}{$folder} .= $code . "\n";
}
for my $target (sort keys %text) {
    my $names = $declared{$target} || {};
    my %edge;
    for my $folder (keys %{$text{$target}}) {
        my %seen; $seen{$_} = 1 for $text{$target}{$folder} =~ /\b([A-Za-z_]\w*)\b/g;
        for my $name (keys %seen) {
            my $home = $names->{$name};
            next unless defined $home && $home ne $folder;
            push @{$edge{$folder}{$home}}, $name;
        }
    }
    for my $from (sort keys %edge) {
        for my $to (sort keys %{$edge{$from}}) {
            print "$target: $from -> $to (" . join(", ", sort @{$edge{$from}{$to}}) . ")\n" if $verbose;
            next unless $from lt $to && $edge{$to}{$from};
            print "check-layers: in $target, $from and $to refer to each other: $from uses "
                . join(", ", sort @{$edge{$from}{$to}}) . "; $to uses " . join(", ", sort @{$edge{$to}{$from}}) . "\n";
            $failed = 1;
        }
    }
}
exit($failed ? 1 : 0);
' -- "$@"
