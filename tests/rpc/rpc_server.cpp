// An RPC server for the tests: ggml's own ggml_backend_rpc_start_server with the CPU backend,
// on 127.0.0.1:PORT, which serves one client connection at a time. Linked with
//   -Wl,--wrap=accept,--wrap=ggml_backend_buft_alloc_buffer,--wrap=ggml_backend_buffer_free
// so that it
//   - prints every buffer it allocates and frees for its clients ("alloc SIZE", "free SIZE"):
//     what the client's allocator planned for this server, counted where the memory is taken;
//   - stops by itself: after MAX_CLIENTS connections (the next accept fails, and ggml's loop
//     returns) or after MAX_SECONDS (SIGALRM), whichever comes first;
//   - with MAX_HELD, refuses an allocation that would make it hold more than MAX_HELD bytes, as
//     a device out of memory does (the client gets no buffer).
//
// usage: rpc_server PORT MAX_CLIENTS MAX_SECONDS [MAX_HELD]
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ggml-backend.h"
#include "ggml-rpc.h"

namespace {
int clients_left = 0;
std::size_t max_held = SIZE_MAX;
std::size_t held = 0;
}  // namespace

extern "C" {
int __real_accept(int fd, sockaddr* addr, socklen_t* len);
ggml_backend_buffer_t __real_ggml_backend_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size);
void __real_ggml_backend_buffer_free(ggml_backend_buffer_t buffer);

int __wrap_accept(int fd, sockaddr* addr, socklen_t* len) {
  if (clients_left-- <= 0) {
    std::printf("served its last client\n");
    errno = ECONNABORTED;
    return -1;
  }
  return __real_accept(fd, addr, len);
}

ggml_backend_buffer_t __wrap_ggml_backend_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size) {
  if (size > max_held - held) {
    std::printf("refused %zu\n", size);
    return nullptr;
  }
  ggml_backend_buffer_t buffer = __real_ggml_backend_buft_alloc_buffer(buft, size);
  if (buffer != nullptr) {
    held += ggml_backend_buffer_get_size(buffer);
    std::printf("alloc %zu\n", ggml_backend_buffer_get_size(buffer));
  }
  return buffer;
}

void __wrap_ggml_backend_buffer_free(ggml_backend_buffer_t buffer) {
  if (buffer != nullptr) {
    held -= ggml_backend_buffer_get_size(buffer);
    std::printf("free %zu\n", ggml_backend_buffer_get_size(buffer));
  }
  __real_ggml_backend_buffer_free(buffer);
}
}

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: rpc_server PORT MAX_CLIENTS MAX_SECONDS [MAX_HELD]\n");
    return 2;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  clients_left = std::atoi(argv[2]);
  alarm(static_cast<unsigned>(std::atoi(argv[3])));
  if (argc == 5) max_held = std::strtoull(argv[4], nullptr, 10);
  ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
  if (cpu == nullptr) {
    std::fprintf(stderr, "rpc_server: no CPU device\n");
    return 1;
  }
  const std::string endpoint = std::string("127.0.0.1:") + argv[1];
  // returns only when it cannot listen or accept
  ggml_backend_rpc_start_server(endpoint.c_str(), /*cache_dir=*/nullptr, /*n_threads=*/2, /*n_devices=*/1, &cpu);
  return clients_left < 0 ? 0 : 1;
}
