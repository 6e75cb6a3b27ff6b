#!/bin/sh
# make-man-pages.sh STX STX_STUDIO OUT_DIR
#
# Writes OUT_DIR/stx.1 and OUT_DIR/stx-studio.1, the manual pages of the two programs, from the programs
# themselves so that the pages cannot drift from them (STX_STUDIO "-": a build without the studio, stx.1
# only):
#
#   stx.1         help2man(1) writes the header (the version of `stx --version`), NAME (the first line of
#                 `stx --help`) and SYNOPSIS, and puts the sections in order. The awk formatter below turns
#                 the top-level options and, for each subcommand that `stx --help` lists (and each of their
#                 own subcommands: `stx sample image`, ...), `stx SUB --help` into roff: a usage line in
#                 SYNOPSIS, and in COMMANDS one subsection per subcommand with its usage, options, notes and
#                 examples. DESCRIPTION, EXIT STATUS, ENVIRONMENT, FILES and SEE ALSO are written here, from
#                 the README.
#   stx-studio.1  help2man(1) writes NAME, SYNOPSIS and OPTIONS from `stx-studio --help` (QCommandLineParser,
#                 run with QT_QPA_PLATFORM=offscreen so that no display is needed), and the DESCRIPTION and
#                 the other sections come from here, from the README.
#
# The programs are only asked for --help and --version: nothing is trained, loaded or written. The date in
# the page header is SOURCE_DATE_EPOCH's where it is set (reproducible builds), else today's.
# Needs a POSIX shell, awk and help2man (Debian: apt-get install help2man).
set -eu

usage() {
  echo "usage: $0 STX STX_STUDIO OUT_DIR" >&2
  exit 2
}
[ $# -eq 3 ] || usage
stx=$1
studio=$2
out=$3

fail() {
  echo "make-man-pages.sh: $*" >&2
  exit 1
}
[ -x "$stx" ] || fail "$stx: not an executable file"
[ "$studio" = - ] || [ -x "$studio" ] || fail "$studio: not an executable file"
command -v help2man >/dev/null 2>&1 || fail "help2man not found (Debian: apt-get install help2man)"

# help2man runs the program by path; make it absolute so that a relative path works from anywhere.
case $stx in /*) ;; *) stx=$(pwd)/$stx ;; esac
case $studio in /* | -) ;; *) studio=$(pwd)/$studio ;; esac

mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/stx-man.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

export LC_ALL=C

# The month and year of the page header.
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
  page_date=$(date -u -d "@$SOURCE_DATE_EPOCH" '+%B %Y' 2>/dev/null || date -u -r "$SOURCE_DATE_EPOCH" '+%B %Y')
else
  page_date=$(date -u '+%B %Y')
fi

version_line=$("$stx" --version </dev/null | head -n 1)
version=${version_line##* }
[ -n "$version" ] || fail "$stx --version printed nothing"

# ---------------------------------------------------------------------------------------------------------
# The formatter: CLI11's help text on stdin, roff on stdout. PART says what to print:
#   options   the .TP list of the "Options:" block only
#   full      a subsection of COMMANDS: the description, the usage line, the options, the subcommands and
#             the closing notes and examples
# CLI11 writes an option or subcommand at column 3 and its description from column 31 on the same line, or,
# when the option's text reaches column 30, on the next lines indented by 30 spaces.
cat >"$work/cli11-to-roff.awk" <<'AWK'
function esc(s) {
  gsub(/\\/, "\\e", s)
  gsub(/-/, "\\-", s)
  return s
}
# A line of text: roff must not read a leading dot or quote as a request.
function text(s) {
  s = esc(s)
  if (s ~ /^['.]/) s = "\\&" s
  return s
}
function trim(s) {
  sub(/^[ \t]+/, "", s)
  sub(/[ \t]+$/, "", s)
  return s
}
# "--steps INT:INT in 1 to 100000000" -> bold flags, italic type, the rest as it is.
function option_tag(name,    flags, rest, n, parts, i, out, type) {
  flags = name
  rest = ""
  if (index(name, " ") > 0) {
    flags = substr(name, 1, index(name, " ") - 1)
    rest = substr(name, index(name, " ") + 1)
  }
  n = split(flags, parts, ",")
  out = ""
  for (i = 1; i <= n; i++) out = out (i > 1 ? ", " : "") "\\fB" esc(parts[i]) "\\fR"
  if (rest != "") {
    if (match(rest, /^[A-Z]+/)) {
      type = substr(rest, 1, RLENGTH)
      rest = substr(rest, RLENGTH + 1)
      out = out " \\fI" type "\\fR" esc(rest)
    } else {
      out = out " " esc(rest)
    }
  }
  if (out ~ /^['.]/) out = "\\&" out
  return out
}
# "Usage: stx sample image [OPTIONS]" -> bold words, italic placeholders.
function usage_line(s,    n, words, i, w, out) {
  n = split(s, words, " ")
  out = ""
  for (i = 2; i <= n; i++) {
    w = words[i]
    if (w ~ /^\[?[A-Z]+\]?(\.\.\.)?$/) {
      sub(/[A-Z]+/, "\\fI&\\fR", w)
      out = out (out == "" ? "" : " ") w
    } else {
      out = out (out == "" ? "" : " ") "\\fB" esc(w) "\\fR"
    }
  }
  return out
}
# An option or subcommand is complete: its line, and the description lines that followed it, if any. CLI11
# pads a name shorter than 28 characters to column 30 and writes the description after it on the same
# line; a longer name has the line to itself and the description follows, indented by 30 spaces.
function flush_item(    name, desc, tag) {
  if (item_line == "") return
  if (item_more != "") {
    name = trim(item_line)
    desc = item_more
  } else if (length(item_line) > 30 && substr(item_line, 30, 1) == " ") {
    name = trim(substr(item_line, 3, 28))
    desc = trim(substr(item_line, 31))
  } else {
    name = trim(item_line)
    desc = ""
  }
  if (item_block == "options") tag = option_tag(name)
  else tag = "\\fB" esc(name) "\\fR"
  print ".TP"
  print tag
  if (desc != "") print text(desc)
  item_line = ""
  item_more = ""
}
function flush_example() {
  if (example_open) {
    print ".fi"
    print ".RE"
    example_open = 0
  }
}
BEGIN { block = "head"; item_line = ""; item_more = ""; list_open = 0; example_open = 0; seen_usage = 0 }
{
  line = $0
  sub(/\r$/, "", line)
}
# The head: the description line(s) and the usage line.
block == "head" {
  if (line ~ /^Usage: /) {
    if (part == "full") {
      print ".PP"
      print usage_line(line)
    }
    seen_usage = 1
    next
  }
  if (line == "Options:") { block = "options"; next }
  if (line == "Subcommands:") { block = "subcommands"; next }
  if (trim(line) == "") next
  if (part == "full" && !seen_usage) {
    print ".PP"
    print text(trim(line))
  }
  next
}
block == "options" || block == "subcommands" {
  if (trim(line) == "") { flush_item(); block = "after"; list_open = 0; next }
  if (line ~ /^                              [^ ]/) {   # a description line
    if (item_line != "") item_more = item_more (item_more == "" ? "" : " ") trim(line)
    next
  }
  if (line ~ /^  [^ ]/) {
    flush_item()
    if (block == "subcommands" && part != "full") next
    if (block == "options" && part != "full" && part != "options") next
    if (block == "subcommands" && !list_open) {
      print ".PP"
      print "Subcommands:"
      list_open = 1
    }
    item_line = line
    item_block = block
    next
  }
  # anything else ends the block
  flush_item()
  block = "after"
  list_open = 0
}
# After the lists: notes and examples.
block == "after" {
  if (line == "Options:") { flush_example(); block = "options"; next }
  if (line == "Subcommands:") { flush_example(); block = "subcommands"; next }
  if (part != "full") next
  if (trim(line) == "") { flush_example(); next }
  if (line ~ /^Examples?:$/) {
    flush_example()
    print ".PP"
    print text(line)
    print ".RS"
    print ".nf"
    example_open = 1
    next
  }
  if (line ~ /^Examples?: /) {
    flush_example()
    print ".PP"
    print text(substr(line, 1, index(line, ":")))
    print ".RS"
    print ".nf"
    print text(trim(substr(line, index(line, ":") + 1)))
    print ".fi"
    print ".RE"
    next
  }
  if (example_open && line ~ /^  /) { print text(trim(line)); next }
  flush_example()
  print ".PP"
  print text(trim(line))
}
END {
  flush_item()
  flush_example()
}
AWK

cli11_to_roff() {  # PART, reads the help text on stdin
  awk -v part="$1" -f "$work/cli11-to-roff.awk"
}

# The names in the "Subcommands:" block of a help text on stdin.
subcommand_names() {
  awk '
    $0 == "Subcommands:" { inside = 1; next }
    inside && /^[ \t]*$/ { inside = 0 }
    inside && /^  [^ -]/ { print $1 }
  '
}

# ---------------------------------------------------------------------------------------------------------
# stx.1
"$stx" --help </dev/null >"$work/stx.help"
summary=$(head -n 1 "$work/stx.help" | sed 's/^[^:]*: //')
[ -n "$summary" ] || fail "$stx --help: no description on its first line"

# Every subcommand, depth first ("train", ..., "sample", "sample image", ...), each help asked for once:
# line N of $work/commands is a command, $work/help.N its help.
: >"$work/commands"
count=0
list_commands() {  # HELP_FILE [COMMAND...]: the subcommands that HELP_FILE, the help of stx COMMAND..., lists
  parent_help=$1
  shift
  for name in $(subcommand_names <"$parent_help"); do
    count=$((count + 1))
    echo "$* $name" | sed 's/^ //' >>"$work/commands"
    "$stx" "$@" "$name" --help </dev/null >"$work/help.$count"
    list_commands "$work/help.$count" "$@" "$name"
  done
}
list_commands "$work/stx.help"
[ -s "$work/commands" ] || fail "$stx --help lists no subcommands"

{
  echo '[>SYNOPSIS]'
  n=0
  while read -r command; do
    n=$((n + 1))
    awk '/^Usage: / { print; exit }' "$work/help.$n" >"$work/usage"
    [ -s "$work/usage" ] || fail "$stx $command --help: no Usage: line"
    echo '.br'
    cli11_to_roff full <"$work/usage" | sed -n '2p'
  done <"$work/commands"

  echo '[=DESCRIPTION]'
  cat <<'ROFF'
.PP
\fBstx\fR is the command line of STX Studio. It trains Sparse Transformers (Child et al. 2019) with
strided or fixed attention on folders of images, audio or text, evaluates them, prints their model cards,
and samples images (PNG), 12\ kHz audio (WAV) and text with them; it also shows and checks the attention
patterns and the CPU kernels. It does every engine job of \fBstx\-studio\fR(1) without a window.
.PP
A \fB\-\-model\fR option takes a model folder, a run folder (its latest checkpoint) or the name of a
bundled model: \fBimage\fR, \fBaudio\fR or \fBtext\fR.
ROFF

  echo '[=OPTIONS]'
  cli11_to_roff options <"$work/stx.help"

  echo '[COMMANDS]'
  n=0
  while read -r command; do
    n=$((n + 1))
    echo ".SS \"stx $command\""
    cli11_to_roff full <"$work/help.$n"
  done <"$work/commands"

  cat <<'ROFF'
[EXIT STATUS]
.TP
.B 0
Success.
.TP
.B 1
A failed run or check, with a one\-line message.
.TP
.B 2
A bad command line.
.TP
.B 130
Stopped by Ctrl\-C: \fBstx train\fR saves a checkpoint after the current step, and \fBstx sample\fR
writes what was generated.
[ENVIRONMENT]
.TP
.B STX_THREADS
The number of threads a job may run on (a whole number from 1 to 1024), where \fB\-\-threads\fR is not
given. By default \fBstx\fR uses every core it may run on.
.TP
.BR RANK ", " WORLD_SIZE ", " MASTER_ADDR ", " MASTER_PORT
Data\-parallel training over several machines: set them on each machine and run the same
\fBstx train\fR command (\fBMASTER_PORT\fR defaults to 29500).
.TP
.B STX_BUNDLED_MODELS
The folder of the bundled models, instead of the one beside the program; set but empty, no bundled
models.
[FILES]
.TP
.I /usr/share/stx\-studio/models
The bundled models, found by name: \fI../share/stx\-studio/models\fR from the folder of the \fBstx\fR
executable.
.TP
\fIDIR\fR/latest.json, \fIDIR\fR/checkpoints/
A training run: the checkpoint folders (each with \fIconfig.json\fR, \fImodel.safetensors\fR and, while
training, \fItrain_state.json\fR and \fItrain_state.safetensors\fR) and the file naming the latest.
[SEE ALSO]
.BR stx\-studio (1)
.PP
R. Child, S. Gray, A. Radford and I. Sutskever, \fIGenerating Long Sequences with Sparse
Transformers\fR, arXiv:1904.10509, 2019.
ROFF
} >"$work/stx.h2m"

help2man --no-info --section=1 --name="$summary" --include="$work/stx.h2m" \
  --output="$out/stx.1" "$stx"

# ---------------------------------------------------------------------------------------------------------
# stx-studio.1
studio_sections() {
  cat <<'ROFF'
[=DESCRIPTION]
.PP
\fBstx\-studio\fR is the desktop application of STX Studio, a workbench for Sparse Transformers (Child
et al. 2019): Transformers whose strided or fixed attention sees a long context while each position
attends to only a few earlier ones. It completes images, generates 12\ kHz classical audio and continues
text, and it shows live what the model attended to while it generates. It exports PNG, WAV or text files.
.PP
Its model library lists the three bundled models (image, audio and text, ready to generate with no
download) and the user's own. A training wizard fine\-tunes a model, or trains a new one, on a folder of
the user's images, audio or text. The window has one tab for each job:
.TP
.B Image
Samples images, or completes an opened image from the rows it keeps; points at a pixel to show what it
attended to.
.TP
.B Audio
Generates 12\ kHz audio or continues an opened clip, plays it, and exports WAV.
.TP
.B Text
Continues a typed or opened prompt, streaming the text as it is generated.
.TP
.B Patterns
Draws the strided, fixed and dense attention patterns: what each query attends to.
.TP
.B Models
The model library: the bundled models and the user's, with their model cards.
.PP
\fBEdit > Preferences\fR chooses where the models run (Automatic, CPU or CUDA GPU) and how many CPU
threads they use; the status bar shows where the current model runs. Everything runs on the local machine,
with no network.
.PP
The command line \fBstx\fR(1) does every job of the studio without a window.
ROFF
}

studio_name='desktop studio for Sparse Transformers: complete images, generate audio, continue text'

if [ "$studio" = - ]; then
  exit 0
fi
studio_sections >"$work/stx-studio.h2m"
QT_QPA_PLATFORM=offscreen help2man --no-info --section=1 --name="$studio_name" \
  --include="$work/stx-studio.h2m" --output="$out/stx-studio.1" "$studio"
