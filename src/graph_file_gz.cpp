#include "galloc/graph_file_gz.hpp"

#include <zlib.h>

#include <string>

namespace galloc {

Result<GraphFile> read_graph_file_any(const std::string& path) {
  if (!path.ends_with(".gz")) return read_graph_file(path);
  gzFile in = gzopen(path.c_str(), "rb");
  if (in == nullptr) return invalid_argument(path + ": cannot open the file");
  std::string text;
  char chunk[1 << 16];
  int n = 0;
  while ((n = gzread(in, chunk, sizeof chunk)) > 0) text.append(chunk, static_cast<std::size_t>(n));
  int error = Z_OK;
  const std::string reason = n < 0 ? gzerror(in, &error) : "";
  gzclose(in);
  if (n < 0) return invalid_argument(path + ": not a readable gzip file (" + reason + ")");
  auto file = read_graph_json(text);
  if (!file) return Status(file.status().code(), path + ": " + file.status().message());
  return file;
}

}  // namespace galloc
