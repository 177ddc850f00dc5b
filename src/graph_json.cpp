// The galloc graph file format (docs/graph-format.md). The reader checks every field by hand
// and reports the JSON path of the first problem; nlohmann-json only tokenises.
#include "galloc/graph_json.hpp"

#include <algorithm>
#include <fstream>
#include <limits>
#include <new>
#include <set>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

namespace galloc {

NullBufferTypes make_null_buffer_types(const GraphFile& file) {
  NullBufferTypes result;
  for (const BufferTypeDesc& desc : file.buffer_types) {
    auto type = std::make_unique<NullBufferType>(desc.alignment, desc.max_size, desc.name);
    type->set_alloc_padding(desc.alloc_padding);
    result.owned.push_back(std::move(type));
  }
  if (file.buffer_type_of_id.empty()) {
    for (const auto& type : result.owned) result.per_id.push_back(type.get());
  } else {
    for (int index : file.buffer_type_of_id) {
      const bool known = index >= 0 && static_cast<std::size_t>(index) < result.owned.size();
      result.per_id.push_back(known ? result.owned[static_cast<std::size_t>(index)].get() : nullptr);
    }
  }
  return result;
}

namespace {

using json = nlohmann::json;

// Thrown inside the reader only; read_graph_json turns it into a Status.
struct LoadError {
  std::string message;
};

[[noreturn]] void fail(std::string message) { throw LoadError{std::move(message)}; }

constexpr int kMaxDepth = 64;  // the format itself needs 4 levels

// Rejects absurd nesting before the parser sees it (a cheap scan that skips strings).
void check_nesting(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) {
        fail("not valid for this format: JSON nested deeper than " + std::to_string(kMaxDepth) + " levels (at byte " +
             std::to_string(i) + ")");
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

// A short rendering of a JSON value for messages.
std::string show(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

std::string type_word(const json& value) {
  if (value.is_number_float()) return "a number with a fraction or exponent";
  return std::string("a ") + value.type_name();
}

void check_keys(const json& object, std::initializer_list<std::string_view> allowed, const std::string& where) {
  for (const auto& item : object.items()) {
    if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end()) {
      std::string known;
      for (std::string_view key : allowed) known += (known.empty() ? "" : ", ") + std::string(key);
      fail(where + ": unknown field '" + item.key() + "' (known: " + known + ")");
    }
  }
}

// nullptr when absent or null.
const json* optional_field(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

const json& required_field(const json& object, const char* key, const std::string& where) {
  const json* value = optional_field(object, key);
  if (value == nullptr) fail(where + ": missing field '" + key + "'");
  return *value;
}

// An unsigned 64-bit integer (nlohmann keeps non-negative integers as unsigned).
Bytes as_u64(const json& value, const std::string& where, const std::string& what) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer()) {
    fail(where + ": " + what + " is " + show(value) + "; it cannot be negative");
  }
  if (value.is_number_float()) {
    fail(where + ": " + what + " must be an integer from 0 to 2^64-1, not " + show(value));
  }
  fail(where + ": " + what + " must be an unsigned integer, not " + type_word(value));
}

std::int64_t as_i64(const json& value, const std::string& where, const std::string& what, std::int64_t lo,
                    std::int64_t hi) {
  std::int64_t number = 0;
  if (value.is_number_unsigned()) {
    const auto u = value.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail(where + ": " + what + " is " + show(value) + ", above " + std::to_string(hi));
    }
    number = static_cast<std::int64_t>(u);
  } else if (value.is_number_integer()) {
    number = value.get<std::int64_t>();
  } else if (value.is_number_float()) {
    fail(where + ": " + what + " must be an integer, not " + show(value));
  } else {
    fail(where + ": " + what + " must be an integer, not " + type_word(value));
  }
  if (number < lo || number > hi) {
    fail(where + ": " + what + " is " + std::to_string(number) + ", outside [" + std::to_string(lo) + ", " +
         std::to_string(hi) + "]");
  }
  return number;
}

const std::string& as_string(const json& value, const std::string& where, const std::string& what) {
  if (!value.is_string()) fail(where + ": " + what + " must be a string, not " + type_word(value));
  return value.get_ref<const std::string&>();
}

const json& as_array(const json& value, const std::string& where, const std::string& what) {
  if (!value.is_array()) fail(where + ": " + what + " must be an array, not " + type_word(value));
  return value;
}

// A tensor id in [0, n).
TensorId as_tensor_id(const json& value, std::size_t n, const std::string& where, const std::string& what) {
  if (!value.is_number_integer()) {
    fail(where + ": " + what + " must be a tensor id (an integer), not " + type_word(value));
  }
  if (!value.is_number_unsigned() || value.get<std::uint64_t>() >= n) {  // negative or too large
    fail(where + ": " + what + " is tensor " + show(value) + ", which is not in the file (" + std::to_string(n) +
         " tensors, ids 0.." + std::to_string(n == 0 ? 0 : n - 1) + ")");
  }
  return static_cast<TensorId>(value.get<std::uint64_t>());
}

std::vector<BufferTypeDesc> read_buffer_types(const json& root) {
  const json& list = as_array(required_field(root, "buffer_types", "graph file"), "graph file", "field 'buffer_types'");
  if (list.empty()) fail("graph file: field 'buffer_types' must list at least one buffer type");
  std::vector<BufferTypeDesc> types;
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::string where = "buffer_types[" + std::to_string(i) + "]";
    const json& entry = list[i];
    if (!entry.is_object()) fail(where + " must be an object, not " + type_word(entry));
    check_keys(entry, {"name", "alignment", "max_size", "alloc_padding"}, where);
    BufferTypeDesc desc;
    desc.name = as_string(required_field(entry, "name", where), where, "field 'name'");
    where += " ('" + desc.name + "')";
    desc.alignment = as_u64(required_field(entry, "alignment", where), where, "field 'alignment'");
    if (!is_power_of_two(desc.alignment)) {
      fail(where + ": alignment " + std::to_string(desc.alignment) + " is not a power of two");
    }
    if (const json* v = optional_field(entry, "max_size")) {
      desc.max_size = as_u64(*v, where, "field 'max_size'");
      if (desc.max_size == 0) fail(where + ": max_size must be at least 1");
    }
    if (const json* v = optional_field(entry, "alloc_padding")) {
      desc.alloc_padding = as_u64(*v, where, "field 'alloc_padding'");
    }
    types.push_back(std::move(desc));
  }
  return types;
}

std::vector<int> read_buffers(const json& root, std::size_t n_types) {
  std::vector<int> result;
  const json* list = optional_field(root, "buffers");
  if (list == nullptr) {
    for (std::size_t i = 0; i < n_types; ++i) result.push_back(static_cast<int>(i));
    return result;
  }
  as_array(*list, "graph file", "field 'buffers'");
  if (list->empty()) fail("graph file: field 'buffers' must list at least one buffer id");
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::string where = "buffers[" + std::to_string(i) + "]";
    const json& v = (*list)[i];
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() >= n_types) {
      fail(where + ": " + show(v) + " is not a buffer type index (" + std::to_string(n_types) +
           " buffer types, indices 0.." + std::to_string(n_types - 1) + ")");
    }
    result.push_back(static_cast<int>(v.get<std::uint64_t>()));
  }
  return result;
}

struct FlagName {
  std::string_view name;
  TensorFlag flag;
};
constexpr FlagName kFlagNames[] = {
    {"input", kFlagInput}, {"output", kFlagOutput}, {"param", kFlagParam}, {"loss", kFlagLoss}};

Tensor read_tensor(const json& entry, std::size_t index, std::size_t n) {
  std::string where = "tensors[" + std::to_string(index) + "]";
  if (!entry.is_object()) fail(where + " must be an object, not " + type_word(entry));
  Tensor t;
  if (const json* name = optional_field(entry, "name"); name != nullptr && name->is_string()) {
    t.name = name->get<std::string>();
  }
  const json& id = required_field(entry, "id", where);
  if (!id.is_number_unsigned() || id.get<std::uint64_t>() != index) {
    fail(where + ": field 'id' is " + show(id) + "; tensor ids must be 0..n-1 in file order, so " +
         "this one must be " + std::to_string(index));
  }
  where += " (id " + std::to_string(index) + (t.name.empty() ? "" : ", '" + t.name + "'") + ")";
  check_keys(entry, {"id", "name", "type", "ne", "nb", "op", "src", "view_src", "view_offs", "flags", "has_memory"},
             where);
  if (const json* name = optional_field(entry, "name"); name != nullptr && !name->is_string()) {
    fail(where + ": field 'name' must be a string, not " + type_word(*name));
  }

  const std::string& type_name = as_string(required_field(entry, "type", where), where, "field 'type'");
  const auto type = data_type_from_name(type_name);
  if (!type) {
    fail(where + ": unknown type '" + type_name +
         "' (field 'type' takes ggml type names: \"f32\", \"f16\", \"q4_0\", \"q4_K\", ...)");
  }
  t.type = *type;

  const json& ne = required_field(entry, "ne", where);
  if (!ne.is_array() || ne.size() != kMaxDims) {
    fail(where + ": field 'ne' must be an array of 4 integers, not " + show(ne));
  }
  for (std::size_t d = 0; d < kMaxDims; ++d) {
    const json& v = ne[d];
    if (!v.is_number_integer()) {
      fail(where + ": field 'ne' must be an array of 4 integers (ne[" + std::to_string(d) + "] is " + show(v) + ")");
    }
    if (!v.is_number_unsigned()) {
      fail(where + ": ne[" + std::to_string(d) + "] is " + show(v) + "; sizes cannot be negative");
    }
    t.ne[d] = as_i64(v, where, "ne[" + std::to_string(d) + "]", 0, std::numeric_limits<std::int64_t>::max());
  }

  if (const json* nb = optional_field(entry, "nb")) {
    if (!nb->is_array() || nb->size() != kMaxDims) {
      fail(where + ": field 'nb' must be an array of 4 unsigned integers, not " + show(*nb));
    }
    for (std::size_t d = 0; d < kMaxDims; ++d) {
      t.nb[d] = as_u64((*nb)[d], where, "nb[" + std::to_string(d) + "]");
    }
  } else {
    t.nb = contiguous_strides(t.type, t.ne);
  }

  const std::string& op = as_string(required_field(entry, "op", where), where, "field 'op'");
  const auto parsed_op = op_from_name(op);
  if (!parsed_op) {
    fail(where + ": unknown op '" + op +
         "' (field 'op' takes ggml op names: \"NONE\", \"ADD\", \"MUL_MAT\", \"VIEW\", ...)");
  }
  t.op = *parsed_op;

  if (const json* src = optional_field(entry, "src")) {
    as_array(*src, where, "field 'src'");
    if (src->size() > static_cast<std::size_t>(kMaxSources)) {
      fail(where + ": field 'src' has " + std::to_string(src->size()) + " entries; a tensor has at most " +
           std::to_string(kMaxSources) + " sources");
    }
    for (std::size_t s = 0; s < src->size(); ++s) {
      const json& v = (*src)[s];
      if (v.is_null()) continue;  // a hole, as a NULL src[s] in ggml
      t.src[s] = as_tensor_id(v, n, where, "src[" + std::to_string(s) + "]");
    }
  }

  if (const json* view_src = optional_field(entry, "view_src")) {
    t.view_src = as_tensor_id(*view_src, n, where, "field 'view_src'");
  }
  if (const json* view_offs = optional_field(entry, "view_offs")) {
    if (t.view_src == kNoTensor) fail(where + ": field 'view_offs' is set but 'view_src' is not");
    t.view_offs = as_u64(*view_offs, where, "field 'view_offs'");
  }

  if (const json* flags = optional_field(entry, "flags")) {
    as_array(*flags, where, "field 'flags'");
    for (std::size_t f = 0; f < flags->size(); ++f) {
      const std::string& name = as_string((*flags)[f], where, "flags[" + std::to_string(f) + "]");
      const auto* known = std::find_if(std::begin(kFlagNames), std::end(kFlagNames),
                                       [&](const FlagName& flag) { return flag.name == name; });
      if (known == std::end(kFlagNames)) {
        fail(where + ": unknown flag '" + name + "' (flags are \"input\", \"output\", \"param\", \"loss\")");
      }
      t.flags |= known->flag;
    }
  }

  if (const json* has_memory = optional_field(entry, "has_memory")) {
    if (!has_memory->is_boolean()) {
      fail(where + ": field 'has_memory' must be true or false, not " + type_word(*has_memory));
    }
    t.has_memory = has_memory->get<bool>();
  }
  return t;
}

std::vector<TensorId> read_id_list(const json& root, const char* key, std::size_t n) {
  const json& list =
      as_array(required_field(root, key, "graph file"), "graph file", "field '" + std::string(key) + "'");
  std::vector<TensorId> ids;
  ids.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    ids.push_back(as_tensor_id(list[i], n, std::string(key) + "[" + std::to_string(i) + "]", "entry"));
  }
  return ids;
}

std::vector<BufferId> read_buffer_ids(const json& root, const char* key, std::size_t expected, const char* what,
                                      std::size_t n_buffers) {
  std::vector<BufferId> ids;
  const json* list = optional_field(root, key);
  if (list == nullptr) return ids;
  as_array(*list, "graph file", "field '" + std::string(key) + "'");
  if (list->empty()) return ids;
  if (list->size() != expected) {
    fail("graph file: field '" + std::string(key) + "' has " + std::to_string(list->size()) + " entries for " +
         std::to_string(expected) + " " + what);
  }
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& v = (*list)[i];
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() >= n_buffers) {
      fail(std::string(key) + "[" + std::to_string(i) + "]: " + show(v) + " is not a buffer id (" +
           std::to_string(n_buffers) + " buffer ids, 0.." + std::to_string(n_buffers - 1) + ")");
    }
    ids.push_back(static_cast<BufferId>(v.get<std::uint64_t>()));
  }
  return ids;
}

// Parses with a callback that records the first duplicate key (nlohmann would keep the last).
json parse(std::string_view text) {
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  auto callback = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: keys.emplace_back(); break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
          duplicate = parsed.get<std::string>();
        }
        break;
      default: break;
    }
    return true;
  };
  json root;
  try {
    root = json::parse(text.begin(), text.end(), callback);
  } catch (const json::parse_error& e) {
    std::string message = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." -> from "parse error".
    if (auto at = message.find("parse error"); at != std::string::npos) message = message.substr(at);
    fail("not valid JSON: " + message);
  }
  if (!duplicate.empty()) fail("graph file: the key '" + duplicate + "' appears twice in one object");
  return root;
}

GraphFile read(std::string_view text) {
  check_nesting(text);
  const json root = parse(text);
  if (!root.is_object()) fail("not a galloc graph file: the top level must be an object, not " + type_word(root));

  const json* format = optional_field(root, "format");
  if (format == nullptr) {
    fail("not a galloc graph file: missing field 'format' (expected \"galloc-graph\")");
  }
  if (!format->is_string() || format->get_ref<const std::string&>() != kGraphFormatName) {
    fail("not a galloc graph file: field 'format' is " + show(*format) + ", expected \"galloc-graph\"");
  }
  const json* version = optional_field(root, "version");
  if (version == nullptr) fail("graph file: missing field 'version' (this reader reads version 1)");
  if (!version->is_number_integer() || *version != kGraphFormatVersion) {
    fail("graph file: unsupported version " + show(*version) + " (this reader reads version " +
         std::to_string(kGraphFormatVersion) + ")");
  }
  check_keys(root,
             {"format", "version", "buffer_types", "buffers", "tensors", "nodes", "leafs", "node_buffer_ids",
              "leaf_buffer_ids", "inplace_ops", "node_groups", "inplace_across_buffers", "inplace_through_views"},
             "graph file");

  GraphFile file;
  file.buffer_types = read_buffer_types(root);
  file.buffer_type_of_id = read_buffers(root, file.buffer_types.size());

  const json& tensors = as_array(required_field(root, "tensors", "graph file"), "graph file", "field 'tensors'");
  const std::size_t n = tensors.size();
  if (n > static_cast<std::size_t>(std::numeric_limits<TensorId>::max())) {
    fail("graph file: " + std::to_string(n) + " tensors; at most 2^31-1 are supported");
  }
  file.graph.tensors.reserve(n);
  for (std::size_t i = 0; i < n; ++i) file.graph.tensors.push_back(read_tensor(tensors[i], i, n));
  file.graph.nodes = read_id_list(root, "nodes", n);
  file.graph.leafs = read_id_list(root, "leafs", n);

  const std::size_t n_buffers = file.buffer_type_of_id.size();
  file.node_buffer_ids = read_buffer_ids(root, "node_buffer_ids", file.graph.nodes.size(), "nodes", n_buffers);
  file.leaf_buffer_ids = read_buffer_ids(root, "leaf_buffer_ids", file.graph.leafs.size(), "leafs", n_buffers);
  if (const json* ops = optional_field(root, "inplace_ops")) {
    as_array(*ops, "graph file", "field 'inplace_ops'");
    file.graph.inplace_ops.reset();
    for (std::size_t i = 0; i < ops->size(); ++i) {
      const std::string where = "graph file: inplace_ops[" + std::to_string(i) + "]";
      const std::string& name = as_string((*ops)[i], where, "the entry");
      const auto op = op_from_name(name);
      if (!op) fail(where + ": unknown op '" + name + "'");
      file.graph.inplace_ops.set(static_cast<std::size_t>(*op));
    }
  }
  if (const json* groups = optional_field(root, "node_groups")) {
    as_array(*groups, "graph file", "field 'node_groups'");
    if (!groups->empty() && groups->size() != file.graph.nodes.size()) {
      fail("graph file: field 'node_groups' has " + std::to_string(groups->size()) + " entries for " +
           std::to_string(file.graph.nodes.size()) + " nodes");
    }
    for (std::size_t i = 0; i < groups->size(); ++i) {
      const json& v = (*groups)[i];
      if (!v.is_number_unsigned() ||
          v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max())) {
        fail("node_groups[" + std::to_string(i) + "]: " + show(v) + " is not a group number (0..2^31-1)");
      }
      file.graph.node_groups.push_back(static_cast<std::int32_t>(v.get<std::uint64_t>()));
    }
  }
  if (const json* across = optional_field(root, "inplace_across_buffers")) {
    if (!across->is_boolean())
      fail("graph file: field 'inplace_across_buffers' is " + show(*across) + ", expected true or false");
    file.graph.inplace_across_buffers = across->get<bool>();
  }
  if (const json* through = optional_field(root, "inplace_through_views")) {
    if (!through->is_boolean()) {
      fail("graph file: field 'inplace_through_views' is " + show(*through) + ", expected true or false");
    }
    file.graph.inplace_through_views = through->get<bool>();
  }
  return file;
}

}  // namespace

Result<GraphFile> read_graph_json(std::string_view text) {
  try {
    GraphFile file = read(text);
    GALLOC_RETURN_IF_ERROR(validate_graph(file.graph));
    return file;
  } catch (const LoadError& e) {
    return invalid_argument(e.message);
  } catch (const json::exception& e) {
    return invalid_argument(std::string("graph file: ") + e.what());
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kOutOfMemory, "graph file: out of memory while reading it");
  } catch (const std::exception& e) {
    return internal_error(std::string("graph file: ") + e.what());
  } catch (...) {
    return internal_error("graph file: unknown exception while reading it");
  }
}

Result<GraphFile> read_graph_file(const std::string& path) {
  std::string text;
  try {
    std::ifstream in(path, std::ios::binary);
    if (!in) return invalid_argument(path + ": cannot open the file");
    std::ostringstream buffer;
    buffer << in.rdbuf();
    if (in.bad()) return invalid_argument(path + ": cannot read the file");
    text = std::move(buffer).str();
  } catch (const std::exception& e) {
    return invalid_argument(path + ": cannot read the file (" + e.what() + ")");
  }
  auto file = read_graph_json(text);
  if (!file) return Status(file.status().code(), path + ": " + file.status().message());
  return file;
}

namespace {

std::string quoted(std::string_view text) {
  return json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace);
}

// `{"a": 1, "b": [1, 2]}` on one line, fields in the order they are added.
class LineObject {
 public:
  void add_raw(std::string_view key, const std::string& value) {
    text_ += text_.empty() ? "{" : ", ";
    text_ += quoted(key) + ": " + value;
  }
  void add(std::string_view key, std::string_view value) { add_raw(key, quoted(value)); }
  template <typename Number>
  void add_number(std::string_view key, Number value) {
    add_raw(key, std::to_string(value));
  }
  [[nodiscard]] std::string str() const { return text_.empty() ? "{}" : text_ + "}"; }

 private:
  std::string text_;
};

template <typename Range>
std::string number_list(const Range& values) {
  std::string text = "[";
  bool first = true;
  for (const auto& v : values) {
    if (!first) text += ", ";
    text += std::to_string(v);
    first = false;
  }
  return text + "]";
}

std::string tensor_line(const Tensor& t, std::size_t id) {
  LineObject line;
  line.add_number("id", id);
  line.add("name", t.name);
  line.add("type", data_type_name(t.type));
  line.add_raw("ne", number_list(t.ne));
  if (t.nb != contiguous_strides(t.type, t.ne)) line.add_raw("nb", number_list(t.nb));
  line.add("op", op_name(t.op));
  std::size_t n_src = 0;
  for (std::size_t s = 0; s < t.src.size(); ++s) {
    if (t.src[s] != kNoTensor) n_src = s + 1;
  }
  if (n_src > 0) {
    std::string src = "[";
    for (std::size_t s = 0; s < n_src; ++s) {
      if (s > 0) src += ", ";
      src += t.src[s] == kNoTensor ? "null" : std::to_string(t.src[s]);
    }
    line.add_raw("src", src + "]");
  }
  if (t.view_src != kNoTensor) {
    line.add_number("view_src", t.view_src);
    if (t.view_offs != 0) line.add_number("view_offs", t.view_offs);
  }
  std::string flags;
  for (const FlagName& flag : kFlagNames) {
    if ((t.flags & flag.flag) != 0) flags += (flags.empty() ? "" : ", ") + quoted(flag.name);
  }
  if (!flags.empty()) line.add_raw("flags", "[" + flags + "]");
  if (t.has_memory) line.add_raw("has_memory", "true");
  return line.str();
}

}  // namespace

std::string write_graph_json(const GraphFile& file) {
  std::string out = "{\n";
  out += "  \"format\": " + quoted(kGraphFormatName) + ",\n";
  out += "  \"version\": " + std::to_string(kGraphFormatVersion) + ",\n";
  out += "  \"buffer_types\": [";
  for (std::size_t i = 0; i < file.buffer_types.size(); ++i) {
    const BufferTypeDesc& desc = file.buffer_types[i];
    LineObject line;
    line.add("name", desc.name);
    line.add_number("alignment", desc.alignment);
    if (desc.max_size != kUnlimited) line.add_number("max_size", desc.max_size);
    if (desc.alloc_padding != 0) line.add_number("alloc_padding", desc.alloc_padding);
    out += (i == 0 ? "\n    " : ",\n    ") + line.str();
  }
  out += file.buffer_types.empty() ? "],\n" : "\n  ],\n";
  if (file.buffer_type_of_id.empty()) {
    std::vector<std::size_t> identity(file.buffer_types.size());
    for (std::size_t i = 0; i < identity.size(); ++i) identity[i] = i;
    out += "  \"buffers\": " + number_list(identity) + ",\n";
  } else {
    out += "  \"buffers\": " + number_list(file.buffer_type_of_id) + ",\n";
  }
  out += "  \"tensors\": [";
  for (std::size_t i = 0; i < file.graph.tensors.size(); ++i) {
    out += (i == 0 ? "\n    " : ",\n    ") + tensor_line(file.graph.tensors[i], i);
  }
  out += file.graph.tensors.empty() ? "],\n" : "\n  ],\n";
  out += "  \"nodes\": " + number_list(file.graph.nodes) + ",\n";
  out += "  \"leafs\": " + number_list(file.graph.leafs);
  if (!file.node_buffer_ids.empty()) out += ",\n  \"node_buffer_ids\": " + number_list(file.node_buffer_ids);
  if (!file.leaf_buffer_ids.empty()) out += ",\n  \"leaf_buffer_ids\": " + number_list(file.leaf_buffer_ids);
  if (file.graph.inplace_ops != default_inplace_ops()) {
    out += ",\n  \"inplace_ops\": [";
    bool first = true;
    for (std::size_t i = 0; i < file.graph.inplace_ops.size(); ++i) {
      if (!file.graph.inplace_ops.test(i)) continue;
      out += std::string(first ? "" : ", ") + "\"" + std::string(op_name(static_cast<Op>(i))) + "\"";
      first = false;
    }
    out += "]";
  }
  if (!file.graph.node_groups.empty()) out += ",\n  \"node_groups\": " + number_list(file.graph.node_groups);
  if (!file.graph.inplace_across_buffers) out += ",\n  \"inplace_across_buffers\": false";
  if (file.graph.inplace_through_views) out += ",\n  \"inplace_through_views\": true";
  out += "\n}\n";
  return out;
}

Status write_graph_file(const std::string& path, const GraphFile& file) {
  try {
    const std::string text = write_graph_json(file);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) return invalid_argument(path + ": cannot open the file for writing");
    out << text;
    out.flush();
    if (!out) return invalid_argument(path + ": cannot write the file");
    return Status::ok();
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kOutOfMemory, path + ": out of memory while writing the graph");
  } catch (const std::exception& e) {
    return internal_error(path + ": " + e.what());
  }
}

}  // namespace galloc
