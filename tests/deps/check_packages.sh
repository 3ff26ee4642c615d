#!/usr/bin/env bash
# Checks that a fresh Debian 12 machine gets everything this build used from setup.sh's package list.
#
# Usage: check_packages.sh --build DIR --list FILE [--source DIR] [--drop PACKAGE]...
#
# After a configure and build in DIR, it collects
#   - every CMake package configuration file loaded: for each `<Name>_DIR` in DIR/CMakeCache.txt,
#     the file `<Name>Config.cmake` or `<lowercase name>-config.cmake` in that folder (the file, not
#     the folder: a folder such as cmake/Qt6OpenGL may hold files of several packages);
#   - every library the targets link (absolute paths and `-l` names in DIR's link.txt files, `-l`
#     resolved with the compiler's search path), and the compiler, linker, make and cmake binaries;
#   - every header the compiler read (the `.o.d` dependency files the build wrote);
# maps each one to the Debian package that owns it (`dpkg -S`, trying the path, its /usr-merged twin
# and its resolved target), and requires that package to be in the list or reachable from it through
# Depends/PreDepends (`apt-cache depends --recurse`, which reads /var/lib/dpkg/status too, so it works
# without downloaded package lists). Paths no package owns (/usr/local/cuda, the source and build
# trees) are skipped and listed in a note; optional finds that ended NOTFOUND are never collected,
# because only loaded files and linked libraries are.
#
# --drop PACKAGE removes PACKAGE from the list before checking (the test that proves a missing
# package is caught uses it). Exit status: 0 when every owner is covered, 1 with one line per missing
# package naming what needed it, 2 on a usage or environment error.
set -euo pipefail

build="" list="" source_dir="" drops=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --list) list=$2; shift 2 ;;
    --source) source_dir=$2; shift 2 ;;
    --drop) drops+=("$2"); shift 2 ;;
    *) echo "check_packages: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -n "$build" ] && [ -n "$list" ] || { echo "usage: check_packages.sh --build DIR --list FILE [--source DIR] [--drop PACKAGE]" >&2; exit 2; }
[ -f "$build/CMakeCache.txt" ] || { echo "check_packages: $build/CMakeCache.txt: not found (configure first)" >&2; exit 2; }
[ -f "$list" ] || { echo "check_packages: $list: not found" >&2; exit 2; }
for tool in dpkg apt-cache awk; do
  command -v "$tool" >/dev/null || { echo "check_packages: '$tool' not found (this check needs Debian's dpkg and apt)" >&2; exit 2; }
done
build=$(cd "$build" && pwd -P)
[ -n "$source_dir" ] && source_dir=$(cd "$source_dir" && pwd -P)

work=$(mktemp -d)
trap '[ -n "${KEEP_WORK:-}" ] && echo "work: $work" >&2 || rm -rf "$work"' EXIT

# The list, as setup.sh reads it, less the dropped packages.
sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$list" | sort -u > "$work/listed"
for d in "${drops[@]+"${drops[@]}"}"; do
  grep -vxF -- "$d" "$work/listed" > "$work/listed.new" || true
  mv "$work/listed.new" "$work/listed"
done
[ -s "$work/listed" ] || { echo "check_packages: $list: lists no package" >&2; exit 2; }

# Packages a fresh machine gets: the list and its Depends/PreDepends closure.
mapfile -t listed < "$work/listed"
apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
  --no-replaces --no-enhances -- "${listed[@]}" > "$work/depends" 2> "$work/depends.err" || {
  echo "check_packages: apt-cache depends failed:" >&2; cat "$work/depends.err" >&2; exit 2; }
awk '
  /^[^ <]/ { print $1; next }                                  # a package of the closure
  /^ +\|?(Depends|PreDepends): / { n = $2; gsub(/[<>]/, "", n); print n }
' "$work/depends" | sed 's/:[a-z0-9]*$//' | sort -u > "$work/closure"
cat "$work/listed" >> "$work/closure"
sort -u -o "$work/closure" "$work/closure"

# What the build used: "<path>\t<what needed it>" lines.
needs="$work/needs"
: > "$needs"
grep -E '^[A-Za-z0-9_]+_DIR:PATH=' "$build/CMakeCache.txt" | while IFS= read -r line; do
  var=${line%%:PATH=*}; name=${var%_DIR}; dir=${line#*:PATH=}
  [ -d "$dir" ] || continue
  lower=$(printf '%s' "$name" | tr '[:upper:]' '[:lower:]')
  for f in "$dir/${name}Config.cmake" "$dir/${lower}-config.cmake"; do
    if [ -f "$f" ]; then printf '%s\t%s\n' "$f" "CMake package $name ($var)"; break; fi
  done
done >> "$needs"

cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:FILEPATH=//p' "$build/CMakeCache.txt")
for var in CMAKE_CXX_COMPILER CMAKE_LINKER CMAKE_MAKE_PROGRAM CMAKE_COMMAND PKG_CONFIG_EXECUTABLE; do
  p=$(sed -n "s/^$var:[A-Z]*=//p" "$build/CMakeCache.txt" | head -n1)
  [ -n "$p" ] && [ -e "$p" ] && printf '%s\t%s\n' "$p" "tool $var" >> "$needs"
done

find "$build" -name link.txt -print0 | while IFS= read -r -d '' lt; do
  target=$(basename "$(dirname "$lt")"); target=${target%.dir}
  tr ' ' '\n' < "$lt" | while IFS= read -r tok; do
    case "$tok" in
      /*.so|/*.so.*|/*.a) p=$tok ;;
      -l*) [ -n "$cxx" ] || continue
           p=$("$cxx" -print-file-name="lib${tok#-l}.so"); [ "${p#/}" != "$p" ] || p=$("$cxx" -print-file-name="lib${tok#-l}.a")
           [ "${p#/}" != "$p" ] || continue ;;
      *) continue ;;
    esac
    case "$p" in "$build"/*) continue ;; esac
    printf '%s\t%s\n' "$p" "library linked by target $target"
  done
done >> "$needs"

find "$build" -name '*.o.d' -print0 | xargs -0 -r cat | tr ' \\' '\n\n' | grep '^/' | grep -v ':$' \
  | sort -u | while IFS= read -r h; do
  case "$h" in "$build"/*) continue ;; esac
  if [ -n "$source_dir" ]; then case "$h" in "$source_dir"/*) continue ;; esac; fi
  printf '%s\t%s\n' "$h" "header compiled"
done >> "$needs"
sort -u -o "$needs" "$needs"

# Owners: one dpkg -S over all candidate spellings of every path.
cut -f1 "$needs" | sort -u > "$work/paths"
while IFS= read -r p; do
  printf '%s\n' "$p"
  case "$p" in /usr/lib/*) printf '%s\n' "${p#/usr}" ;; /lib/*) printf '/usr%s\n' "$p" ;; esac
  r=$(readlink -f -- "$p" 2>/dev/null || true)
  if [ -n "$r" ] && [ "$r" != "$p" ]; then
    printf '%s\n' "$r"
    case "$r" in /usr/lib/*) printf '%s\n' "${r#/usr}" ;; /lib/*) printf '/usr%s\n' "$r" ;; esac
  fi
done < "$work/paths" | sort -u > "$work/spellings"
tr '\n' '\0' < "$work/spellings" | xargs -0 -r dpkg -S 2>/dev/null | grep -v '^diversion by' > "$work/owners" || true

awk -F'\t' -v owners="$work/owners" -v closure="$work/closure" '
  BEGIN {
    while ((getline line < owners) > 0) {
      i = index(line, ": "); if (i == 0) continue
      pk = substr(line, 1, i - 1); path = substr(line, i + 2)
      gsub(/:[a-z0-9]+/, "", pk); gsub(/ /, "", pk)
      if (path in own) pk = own[path] "," pk
      own[path] = pk
    }
    while ((getline line < closure) > 0) have[line] = 1
  }
  {
    p = $1; why = $2; cands[1] = p; n = 1
    if (p ~ /^\/usr\/lib\//) cands[++n] = substr(p, 5)
    if (p ~ /^\/lib\//) cands[++n] = "/usr" p
    cmd = "readlink -f -- \"" p "\""; r = ""; cmd | getline r; close(cmd)
    if (r != "" && r != p) { cands[++n] = r; if (r ~ /^\/usr\/lib\//) cands[++n] = substr(r, 5); if (r ~ /^\/lib\//) cands[++n] = "/usr" r }
    owners_of = ""
    for (k = 1; k <= n; k++) if (cands[k] in own) { owners_of = own[cands[k]]; break }
    if (owners_of == "") { print "unowned\t" p "\t" why; next }
    m = split(owners_of, list, ",")
    ok = 0
    for (k = 1; k <= m; k++) if (list[k] in have) ok = 1
    rank = (why ~ /^CMake/) ? 1 : (why ~ /^library/) ? 2 : (why ~ /^tool/) ? 3 : 4
    if (!ok) print "missing\t" list[1] "\t" rank "\t" p " (" why ")"
  }
' "$needs" > "$work/verdict"

checked=$(wc -l < "$needs")
if grep -q '^unowned' "$work/verdict"; then
  echo "check_packages: note: owned by no Debian package, skipped:"
  grep '^unowned' "$work/verdict" | cut -f2- | awk -F'\t' '{ d = $1; sub(/\/[^\/]*$/, "", d); print d }' \
    | sort | uniq -c | sed 's/^/  /'
fi
if grep -q '^missing' "$work/verdict"; then
  grep "^missing" "$work/verdict" | sort -t$'\t' -k2,2 -k3,3n -k4,4 | awk -F'\t' -v list="$list" '
    $2 != last { if (last != "") printf "\n"; printf "check_packages: %s is needed but neither listed in %s nor a Depends/PreDepends of a listed package; needed by:", $2, list; last = $2; shown = 0 }
    { if (shown < 5) printf "\n  %s", $4; else if (shown == 5) printf "\n  ..."; shown++ }
    END { printf "\n" }'
  echo "check_packages: FAILED ($checked build inputs checked)"
  exit 1
fi
echo "check_packages: every package configuration file, linked library, tool and header ($checked) is covered by $(wc -l < "$work/listed") listed packages and their Depends/PreDepends"
