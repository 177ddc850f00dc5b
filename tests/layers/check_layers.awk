# The include graph against the layers: see check_layers.sh. POSIX awk (Debian's mawk too).
# Input: the layers file, then every header and source of galloc, paths from the source root.

function fail(message) { print "layers: " message > "/dev/stderr"; errors++ }
function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }

# A shell pattern of the layers file (only * is special) as an anchored regex.
function glob_regex(glob,    re) {
  re = glob
  gsub(/\./, "[.]", re)
  gsub(/\*/, "[^/]*", re)
  return "^" re "$"
}

# The layer of a file or include name: listed as such, by a pattern, or for src/NAME.cpp
# the layer of its header include/galloc/NAME.hpp (or .h). "" when none.
function layer_of(path,    i, base) {
  if (path in layer) return layer[path]
  for (i = 1; i <= n_patterns; ++i) if (path ~ pattern_re[i]) return pattern_layer[i]
  if (path ~ /^src\/[^\/]+\.cpp$/) {
    base = path
    sub(/^src\//, "", base)
    sub(/\.cpp$/, "", base)
    if (("include/galloc/" base ".hpp") in layer) return layer["include/galloc/" base ".hpp"]
    if (("include/galloc/" base ".h") in layer) return layer["include/galloc/" base ".h"]
  }
  return ""
}

# What `#include "name"` in `from` names: a file of the tree if one matches (by the public
# include directory, the including file's directory, then src/, the core's private one), else
# the include name itself, which is how the layers file lists generated headers.
function resolve(name, from,    dir) {
  if (("include/" name) in is_file) return "include/" name
  dir = from
  sub(/[^\/]*$/, "", dir)
  if ((dir name) in is_file) return dir name
  if (("src/" name) in is_file) return "src/" name
  return name
}

BEGIN {
  layers_file = ARGV[1]
  for (i = 2; i < ARGC; ++i) {
    files[++n_files] = ARGV[i]
    is_file[ARGV[i]] = 1
  }
}

FNR == 1 { file = FILENAME }

file == layers_file {
  line = $0
  sub(/#.*/, "", line)
  if (trim(line) == "") next
  n = split(line, f)
  if (f[1] == "layer") {
    if (n < 2) { fail(layers_file ":" FNR ": a layer needs a name"); next }
    if (f[2] in declared) fail(layers_file ":" FNR ": layer " f[2] " is declared twice")
    declared[f[2]] = 1
    names[++n_layers] = f[2]
    for (i = 3; i <= n; ++i) {
      if (index(f[i], "*")) {
        pattern_re[++n_patterns] = glob_regex(f[i])
        pattern_layer[n_patterns] = f[2]
      } else {
        if (f[i] in layer) fail(layers_file ":" FNR ": " f[i] " is in layers " layer[f[i]] " and " f[2])
        layer[f[i]] = f[2]
        listed_at[f[i]] = FNR
      }
    }
  } else if (f[1] == "order") {
    orders[++n_orders] = trim(substr(line, index(line, "order") + 5))
    order_line[n_orders] = FNR
  } else {
    fail(layers_file ":" FNR ": expected `layer NAME FILE...` or `order A < B ...`")
  }
  next
}

{
  if ($0 ~ /^[ \t]*#[ \t]*include[ \t]*"/) {
    name = $0
    sub(/^[^"]*"/, "", name)
    sub(/".*/, "", name)
    includes[++n_includes] = name
    include_from[n_includes] = file
  }
}

END {
  # below[a, b]: layer b is below layer a, so a's files may include b's.
  for (o = 1; o <= n_orders; ++o) {
    n_groups = split(orders[o], groups, "<")
    for (g = 1; g <= n_groups; ++g) {
      n_members[g] = split(groups[g], parts, ",")
      for (m = 1; m <= n_members[g]; ++m) {
        member[g, m] = trim(parts[m])
        if (!(member[g, m] in declared)) {
          fail(layers_file ":" order_line[o] ": `" member[g, m] "` is not a layer")
        }
      }
    }
    for (g = 1; g < n_groups; ++g)
      for (m = 1; m <= n_members[g]; ++m)
        for (k = 1; k <= n_members[g + 1]; ++k) below[member[g + 1, k], member[g, m]] = 1
  }
  for (k = 1; k <= n_layers; ++k)
    for (i = 1; i <= n_layers; ++i)
      if ((names[i], names[k]) in below)
        for (j = 1; j <= n_layers; ++j)
          if ((names[k], names[j]) in below) below[names[i], names[j]] = 1
  cycle = ""
  for (i = 1; i <= n_layers; ++i) if ((names[i], names[i]) in below) cycle = cycle " " names[i]
  if (cycle != "") fail("the order has a cycle through the layers" cycle)

  for (path in listed_at) {
    if (path ~ /^(include|src)\// && !(path in is_file)) {
      fail(layers_file ":" listed_at[path] ": " path " does not exist")
    }
  }
  for (i = 1; i <= n_files; ++i) {
    if (layer_of(files[i]) == "") fail(files[i] " is in no layer: add it to the right layer in " layers_file)
  }
  for (i = 1; i <= n_includes; ++i) {
    from = include_from[i]
    to = resolve(includes[i], from)
    from_layer = layer_of(from)
    to_layer = layer_of(to)
    if (from_layer == "") continue  # reported above
    if (to_layer == "") {
      fail(from " includes \"" includes[i] "\", which is in no layer: add it to " layers_file)
    } else if (to_layer != from_layer && !((from_layer, to_layer) in below)) {
      fail(from " (" from_layer ") includes \"" includes[i] "\" (" to_layer "), which is not below " from_layer)
    }
  }
  if (errors) {
    print "layers: " errors " problem(s); the layers and their order are in " layers_file > "/dev/stderr"
    exit 1
  }
  print "layers: the " n_includes " includes of " n_files " files agree with " layers_file
}
