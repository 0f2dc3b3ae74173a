#!/usr/bin/env bash
# Runs a public library's own test suite against its `autolax convert --all` tree, both outputs
# (issue 43, item 2): the library as published, the default output, the --standalone output.
#
#   tools/cli_library_check.sh SDIST.tar.gz PACKAGE [PYTEST ARGS...]
#
# SDIST: a source distribution that ships its tests/ (e.g. `pip download --no-deps --no-binary
# :all: interpax==0.3.3`); PACKAGE: the import name of the package folder in it. Prints one
# pytest summary line per tree. Needs the library's dependencies installed; nothing of the
# library is installed (each tree is put first on PYTHONPATH, tests copied beside it).
set -euo pipefail
sdist=$(realpath "$1"); package=$2; shift 2
work=$(mktemp -d /tmp/autolax_library_check.XXXXXX)
tar xzf "$sdist" -C "$work"
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)
autolax_root=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$autolax_root${PYTHONPATH:+:$PYTHONPATH}"
for tree in default standalone; do
  mkdir -p "$work/$tree"
  flags=(--all); [ "$tree" = standalone ] && flags+=(--standalone)
  python -m autolax convert "${flags[@]}" "$src/$package" -o "$work/$tree/$package"
  cp -r "$src/tests" "$work/$tree/tests"
  for f in "$src"/pyproject.toml "$src"/setup.cfg "$src"/pytest.ini "$src"/conftest.py; do
    [ -f "$f" ] && cp "$f" "$work/$tree/"
  done
done
for tree in "$src" "$work/default" "$work/standalone"; do
  name=$(basename "$tree")
  [ "$tree" = "$src" ] && name=original
  summary=$(cd "$tree" && PYTHONPATH="$tree:$PYTHONPATH" python -m pytest -q -p no:cacheprovider tests "$@" 2>&1 \
            | tail -n 1 || true)
  echo "$name: $summary"
done
echo "trees in $work"
