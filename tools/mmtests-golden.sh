#!/usr/bin/env bash
# Regenerate tests/fixtures/mmtests-golden/: the fixture results trees (written by mmtwin) and the
# golden files (printed by the real MMTests compare scripts of each era on those trees).
#
#   tools/mmtests-golden.sh MMTESTS_GIT [MMTWIN]
#
# MMTESTS_GIT is a clone of gormanm/mmtests (a bare one will do); MMTWIN the mmtwin command
# (default: mmtwin on PATH). Needs bash, perl, awk, gzip. Not run by CI: the outputs are
# committed, and tests/test_mmtests_golden.py compares mmtwin's own text with them.
# Nothing of MMTests is copied into the project: each era's scripts are extracted with
# `git archive` into a scratch directory, run there, and deleted.
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: $0 MMTESTS_GIT [MMTWIN]" >&2
	exit 2
fi
MMTESTS_GIT=$(cd "$1" && pwd)
MMTWIN=${2:-mmtwin}
HERE=$(cd "$(dirname "$0")/.." && pwd)
OUT=$HERE/tests/fixtures/mmtests-golden
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT

# The MMTests commits, one per era (tests/fixtures/mmtests-golden/README.md says why these).
declare -A COMMIT=([2011]=d8783346 [2011b]=7ed65ad9 [2012]=9e71bc6a [2017]=4aa747e1)
for era in "${!COMMIT[@]}"; do
	mkdir -p "$SCRATCH/mmtests-$era"
	git -C "$MMTESTS_GIT" archive "${COMMIT[$era]}" | tar -x -C "$SCRATCH/mmtests-$era"
	# compare-kernels.sh of 2011-2012 names its kernels in two assignments at its top; a user
	# edited them. Here they come from the environment; nothing else in the script changes.
	if [ -e "$SCRATCH/mmtests-$era/compare-kernels.sh" ]; then
		sed -e 's/^KERNEL_BASE=.*/KERNEL_BASE="$GOLDEN_BASE"/' \
		    -e 's/^KERNEL_COMPARE=.*/KERNEL_COMPARE="$GOLDEN_COMPARE"/' \
		    "$SCRATCH/mmtests-$era/compare-kernels.sh" > "$SCRATCH/mmtests-$era/compare-kernels-golden.sh"
	fi
done

# ---------------------------------------------------------------- fixture trees (mmtwin)
TREES=$OUT/trees
rm -rf "$TREES"
mkdir -p "$TREES"
for run in fsmark largedd mmapstream; do
	"$MMTWIN" compare -e zlcfirst -r "$run" --scale 0.02 --output-dir "$TREES/zlcfirst-$run" > /dev/null
done
"$MMTWIN" compare -e reclaim-writeback-xfs -r fsmark-512M --scale 0.1 --output-dir "$TREES/reclaim-writeback-fsmark" > /dev/null
# The memory hog: two runs of different sizes so that the columns differ, then one comparison tree.
"$MMTWIN" run -m x86-64-4core-512m-xfs -k 3.0-rc6-vanilla --size-gb 0.75 -t 4 --set passes=2 --scale 0.25 \
	--output-dir "$SCRATCH/memhog-a" > /dev/null
"$MMTWIN" run -m x86-64-4core-512m-xfs -k 3.0-rc6-kswapwb --size-gb 0.7 -t 4 --set passes=2 --scale 0.25 \
	--output-dir "$SCRATCH/memhog-b" > /dev/null
# (relative paths: the summary line names the saved trees, and the scratch directory changes)
(cd "$SCRATCH" && "$MMTWIN" compare --results memhog-a --results memhog-b --era 2017 \
	--output-dir "$TREES/memhog" > /dev/null)

# Keep the fixtures small: the current layout's work/log/<RUN>/iter-N directories are read
# neither by these eras' scripts nor by `mmtwin report`; only the classic layout stays.
for tree in "$TREES"/*; do
	for d in "$tree"/work/log/*/; do
		[ -d "$d/iter-0" ] && rm -rf "$d"
	done
done

# ---------------------------------------------------------------- the real scripts
# A copy of the tree's work/log: the scripts write scratch files into the directory they read.
logcopy() {
	rm -rf "$SCRATCH/log"
	cp -r "$TREES/$1/work/log" "$SCRATCH/log"
}

# compare-kernels.sh of 2011, run in the log directory as its users did.
shell_compare() { # era tree base compare... -> stdout
	local era=$1 tree=$2 base=$3
	shift 3
	logcopy "$tree"
	# The ===INPUTS line names the files the graphs would read, by absolute path: the scratch
	# directory is written as LOGDIR so the golden does not change from one run to the next.
	(cd "$SCRATCH/log" && TMPDIR="$SCRATCH/tmp-$era" GOLDEN_BASE="$base" GOLDEN_COMPARE="$*" \
		bash "$SCRATCH/mmtests-$era/compare-kernels-golden.sh") | sed -e "s|$SCRATCH/log|LOGDIR|g"
}

# The two monitor subreports compare-kernels.sh sources after each benchmark's table
# (mmtests-duration, mmtests-vmstat, each followed by a blank line), for a test that has
# no subreport of its own in that era (the memory hog, the mapped writer).
shell_monitors() { # era tree test base compare... -> stdout
	local era=$1 tree=$2 test=$3 base=$4
	shift 4
	logcopy "$tree"
	(cd "$SCRATCH/log" && MMDIR="$SCRATCH/mmtests-$era" FTRACE_TEST="$test" KERNEL_BASE="$base" \
		KERNEL_COMPARE="$*" TMPDIR="$SCRATCH/tmp-$era" bash -c '
		. $MMDIR/config
		SCRIPTDIR=$MMDIR
		for FTRACE_ANALYSER in mmtests-duration mmtests-vmstat; do
			. $SCRIPTDIR/subreport/$FTRACE_ANALYSER
			echo
		done')
}

# compare-mmtests.pl of 2017 with --print-monitor.
perl_monitor() { # tree test names monitor -> stdout
	logcopy "$1"
	perl "$SCRATCH/mmtests-2017/bin/compare-mmtests.pl" -d "$SCRATCH/log" -b "$2" -n "$3" --print-monitor "$4"
}

mkdir -p "$SCRATCH/tmp-2011" "$SCRATCH/tmp-2011b" "$SCRATCH/tmp-2012" "$OUT/2011" "$OUT/2011b" "$OUT/2012" "$OUT/2017"
Z="3.0-rc6-zlcfirst 3.0-rc6-zlcreconsider"
shell_compare 2011 zlcfirst-fsmark 3.0-rc6-vanilla $Z > "$OUT/2011/fsmark.txt"
shell_compare 2011 zlcfirst-largedd 3.0-rc6-vanilla $Z > "$OUT/2011/largedd.txt"
shell_monitors 2011 zlcfirst-mmapstream mmapstream 3.0-rc6-vanilla $Z > "$OUT/2011/mmapstream.txt"
shell_monitors 2011 memhog memhog 3.0-rc6-vanilla 3.0-rc6-kswapwb > "$OUT/2011/memhog.txt"
shell_compare 2011b reclaim-writeback-fsmark 3.0-rc6-vanilla 3.0-rc6-kswapwb 3.0-rc6-nokswapwb > "$OUT/2011b/fsmark.txt"
shell_monitors 2012 memhog memhog 3.0-rc6-vanilla 3.0-rc6-kswapwb > "$OUT/2012/memhog.txt"
perl_monitor memhog memhog 3.0-rc6-vanilla,3.0-rc6-kswapwb duration > "$OUT/2017/memhog-duration.txt"
perl_monitor memhog memhog 3.0-rc6-vanilla,3.0-rc6-kswapwb mmtests-vmstat > "$OUT/2017/memhog-vmstat.txt"
echo "wrote $OUT"
