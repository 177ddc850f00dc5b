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
  // At the end of the input gzread returns 0 even inside a stream; zlib then reports
  // Z_BUF_ERROR: a truncated file, which must not reach the JSON parser as a short graph.
  int error = Z_OK;
  const std::string reason = gzerror(in, &error);
  gzclose(in);
  if (n < 0) return invalid_argument(path + ": not a readable gzip file (" + reason + ")");
  if (error == Z_BUF_ERROR) return invalid_argument(path + ": not a readable gzip file (it ends inside the data)");
  auto file = read_graph_json(text);
  if (!file) return Status(file.status().code(), path + ": " + file.status().message());
  return file;
}

}  // namespace galloc
