#!/usr/bin/env bash
# install_test.sh BUILD_DIR SOURCE_DIR: installs the build into a temporary prefix as a package would, moves
# that prefix elsewhere (the tree must be relocatable), hides the build and source trees, and runs the
# installed programs from there: stx info, stx sample, stx-studio --version and a start of the studio.
# Run by ctest (install.tree); it asserts what a user of the installed package relies on.
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "install_test: $*" >&2; exit 1; }

# As cpack does for each package: every component into one prefix.
for component in cli studio bench; do
  cmake --install "$build" --prefix "$work/first/usr" --component "$component" >/dev/null
done
prefix="$work/moved/usr"
mkdir -p "$work/moved"
mv "$work/first/usr" "$prefix"

for file in bin/stx bin/stx-studio bin/stx-bench \
            share/stx-studio/models/image/config.json share/stx-studio/models/text/model.safetensors \
            share/stx-studio/models/audio/MODEL_CARD.md \
            share/applications/stx-studio.desktop share/icons/hicolor/scalable/apps/stx-studio.svg \
            share/icons/hicolor/256x256/apps/stx-studio.png share/icons/hicolor/16x16/apps/stx-studio.png \
            share/metainfo/io.github.stxstudio.StxStudio.metainfo.xml \
            share/man/man1/stx.1.gz share/man/man1/stx-studio.1.gz \
            share/doc/stx-studio/copyright share/doc/stx-studio-cli/changelog.gz share/man/man1/stx-bench.1.gz; do
  [[ -e "$prefix/$file" ]] || fail "the install has no $file"
done
# No path of the build machine may be needed: the programs must not reach back into the build tree.
if readelf -d "$prefix/bin/stx" | grep -E "R(UN)?PATH" | grep -q "$build"; then
  fail "bin/stx keeps a run path into the build tree: $(readelf -d "$prefix/bin/stx" | grep -E 'R(UN)?PATH')"
fi
zcat "$prefix/share/man/man1/stx.1.gz" | grep -q '^\.SH' || fail "stx.1.gz is not a manual page"
zcat "$prefix/share/man/man1/stx.1.gz" | grep -q 'sample' || fail "stx.1.gz does not describe stx sample"

# The rest runs with the build and source trees hidden under empty folders (a private mount namespace: as
# root, or as a user through a user namespace), so only the installed tree is there to be found.
unshare_args=(--mount)
[[ $(id -u) -eq 0 ]] || unshare_args=(--user --map-root-user --mount)
unshare "${unshare_args[@]}" true 2>/dev/null ||
  fail "cannot hide the build tree: 'unshare ${unshare_args[*]}' is not allowed here (util-linux; kernel user namespaces)"
out="$work/out"
mkdir -p "$out"
unshare "${unshare_args[@]}" env -u STX_BUNDLED_MODELS -u STX_STUDIO_MODELS_DIR HOME="$work/home" \
    QT_QPA_PLATFORM=offscreen STX_STUDIO_NO_AUDIO=1 PREFIX="$prefix" OUT="$out" BUILD="$build" SOURCE="$source" \
    bash -euo pipefail -c '
  mount -t tmpfs none "$BUILD"
  mount -t tmpfs none "$SOURCE"
  [[ ! -e "$BUILD/app" && ! -e "$SOURCE/models" ]] || { echo "the trees are not hidden" >&2; exit 1; }
  mkdir -p "$HOME"
  "$PREFIX/bin/stx" info --model text > "$OUT/info.txt"
  grep -q "parameters" "$OUT/info.txt" || { echo "stx info --model text printed no model:" >&2; cat "$OUT/info.txt" >&2; exit 1; }
  grep -q "$PREFIX/share/stx-studio/models/text" "$OUT/info.txt" ||
    { echo "stx info did not use the installed model:" >&2; cat "$OUT/info.txt" >&2; exit 1; }
  "$PREFIX/bin/stx" sample text --model text --prompt "In the beginning" --max-bytes 40 --seed 3 --quiet \
      --out "$OUT/sample.txt"
  [[ $(wc -c < "$OUT/sample.txt") -ge 40 ]] || { echo "stx sample wrote too little" >&2; exit 1; }
  [[ $("$PREFIX/bin/stx-studio" --version) == "stx-studio "* ]] || { echo "stx-studio --version" >&2; exit 1; }
  # The studio starts, finds its models and keeps running until it is stopped (124: stopped by timeout).
  set +e
  timeout 20 "$PREFIX/bin/stx-studio" > "$OUT/studio.log" 2>&1
  rc=$?
  set -e
  [[ $rc -eq 124 ]] || { echo "stx-studio exited with $rc before it was stopped:" >&2; cat "$OUT/studio.log" >&2; exit 1; }
'
echo "install_test: the installed tree ($(du -sh "$prefix" | cut -f1)) runs with the build and source trees hidden"
