// Shared compute buffers through the drop-in (galloc-ggml.h), with ggml's own API, in checked
// mode (GALLOC_SHARE_CHECK=1):
//   - a graph reading the previous graph's output through a view, as whisper's encoder reads
//     the conv output, computes exactly what it computes unshared;
//   - a deliberate violation (one allocator's alloc between another's alloc and its compute)
//     makes that compute's results NaN instead of silently wrong;
//   - an allocator whose graphs read nothing from the shared buffer for a while, and so is not
//     searched for what it reads (a decoder, token after token), still finds the other
//     allocator's output that a graph of another topology reads;
//   - a reserve that grows the shared buffer between the producer's alloc and the alloc of its
//     reader (another violation) makes the reader's alloc fail instead of reading freed memory;
//   - with two buffer ids, as ggml's scheduler allocates (reserve_n, then alloc_graph), a
//     reader whose reserve grows the shared buffer finds the producer's output moved with it,
//     in host memory and in a device's (read and written through its buffer's interface),
//     without the old and the new buffer held at once;
//   - each allocator reports its own need, and the share group calls reject misuse;
//   - GALLOC_SHARE chooses who shares: "groups" (the default here) share groups only, "1"
//     every allocator, "0" none, and a value it does not know is logged and means "groups";
//   - a member on another buffer type than the group's gets a buffer of its own, with one
//     warning, and every member keeps computing exactly;
//   - a group opened on a second thread while it is open on the first is warned about (two
//     unrelated contexts given one name).
// Links against libggml-galloc.a; prints "ok" and exits 0, or says what failed and exits 1.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "galloc-ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend-impl.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

namespace {

constexpr int kElements = 4096;
int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "share_test: FAILED: %s\n", what.c_str());
    ++failures;
  }
}

// ggml's log, printed, and its warnings and errors kept for the checks.
std::mutex log_mutex;
std::string warnings;

void keep_warnings(ggml_log_level level, const char* text, void*) {
  std::fputs(text, stderr);
  std::lock_guard lock(log_mutex);
  if (level >= GGML_LOG_LEVEL_WARN) warnings += text;
}

// How many times `text` was warned since `from` (a warnings_so_far() value).
int times_warned(const std::string& text, std::size_t from) {
  std::lock_guard lock(log_mutex);
  int times = 0;
  for (std::size_t at = warnings.find(text, from); at != std::string::npos; at = warnings.find(text, at + 1)) ++times;
  return times;
}

std::size_t warnings_so_far() {
  std::lock_guard lock(log_mutex);
  return warnings.size();
}

// A context for one graph's tensors (no data: the allocators place them).
ggml_context* new_context() {
  ggml_init_params params = {64 * ggml_tensor_overhead() + ggml_graph_overhead(), nullptr, /*no_alloc=*/true};
  return ggml_init(params);
}

ggml_cgraph* graph_of(ggml_context* ctx, ggml_tensor* out) {
  ggml_set_output(out);
  ggml_cgraph* gf = ggml_new_graph(ctx);
  ggml_build_forward_expand(gf, out);
  return gf;
}

// The producer: out = scale(x, 2) + x, that is 3x.
struct Producer {
  ggml_context* ctx = new_context();
  ggml_tensor* x = nullptr;
  ggml_tensor* out = nullptr;
  ggml_cgraph* gf = nullptr;
  Producer() {
    x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, kElements);
    ggml_set_input(x);
    out = ggml_add(ctx, ggml_scale(ctx, x, 2.0f), x);
    gf = graph_of(ctx, out);
  }
  ~Producer() { ggml_free(ctx); }
};

// Something large that reads nothing: y = sqr(sqr(z)) over four times the elements.
struct Large {
  ggml_context* ctx = new_context();
  ggml_tensor* z = nullptr;
  ggml_cgraph* gf = nullptr;
  Large() {
    z = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4 * kElements);
    ggml_set_input(z);
    gf = graph_of(ctx, ggml_sqr(ctx, ggml_sqr(ctx, ggml_add(ctx, z, z))));
  }
  ~Large() { ggml_free(ctx); }
};

void set_values(ggml_tensor* t, float first) {
  std::vector<float> v(static_cast<std::size_t>(ggml_nelements(t)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = first + static_cast<float>(i);
  ggml_backend_tensor_set(t, v.data(), 0, ggml_nbytes(t));
}

std::vector<float> values(const ggml_tensor* t) {
  std::vector<float> v(static_cast<std::size_t>(ggml_nelements(t)));
  ggml_backend_tensor_get(t, v.data(), 0, ggml_nbytes(t));
  return v;
}

// Reads the producer's output through a view (as whisper's encoder reads the conv output) and
// needs room of its own, so that the shared buffer must make it: r = out + sqr(w)[0..n).
struct Reader {
  ggml_context* ctx = new_context();
  ggml_tensor* w = nullptr;
  ggml_tensor* r = nullptr;
  ggml_cgraph* gf = nullptr;
  explicit Reader(ggml_tensor* producer_out) {
    ggml_tensor* seen = ggml_view_tensor(ctx, producer_out);
    w = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3 * kElements);
    ggml_set_input(w);
    r = ggml_add(ctx, seen, ggml_view_1d(ctx, ggml_sqr(ctx, w), kElements, 0));
    gf = graph_of(ctx, r);
  }
  ~Reader() { ggml_free(ctx); }
  // Computes the allocated graph with w = 0, 1, ...; whether r is 3x + i*i for the producer's
  // x = 1, 2, ..., as unshared.
  bool computes_exactly(ggml_backend_t cpu) {
    set_values(w, 0.0f);
    if (ggml_backend_graph_compute(cpu, gf) != GGML_STATUS_SUCCESS) return false;
    const std::vector<float> got = values(r);
    bool exact = true;
    for (int i = 0; i < kElements; ++i) {
      const float x = 1.0f + static_cast<float>(i);
      exact = exact && got[static_cast<std::size_t>(i)] == 3.0f * x + static_cast<float>(i) * static_cast<float>(i);
    }
    return exact;
  }
};

// A device's buffer type, as far as an allocator can tell (not host memory: reached through
// the buffer's get_tensor and set_tensor), over CPU memory so that the CPU backend computes on
// it. Counts the buffers it holds at once.
struct DeviceBuffers {
  int live = 0;
  int most_live = 0;
  void (*cpu_free)(ggml_backend_buffer_t) = nullptr;
};
DeviceBuffers device_buffers;
ggml_backend_buffer_type device_type{};

void device_free(ggml_backend_buffer_t buffer) {
  --device_buffers.live;
  device_buffers.cpu_free(buffer);
}

ggml_backend_buffer_t device_alloc(ggml_backend_buffer_type_t, std::size_t size) {
  ggml_backend_buffer_t buffer = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), size);
  if (buffer == nullptr) return nullptr;
  buffer->buft = &device_type;
  device_buffers.cpu_free = buffer->iface.free_buffer;
  buffer->iface.free_buffer = device_free;
  device_buffers.most_live = std::max(device_buffers.most_live, ++device_buffers.live);
  return buffer;
}

const char* device_name(ggml_backend_buffer_type_t) { return "Device"; }
std::size_t device_alignment(ggml_backend_buffer_type_t) {
  return ggml_backend_buft_get_alignment(ggml_backend_cpu_buffer_type());
}
bool device_is_host(ggml_backend_buffer_type_t) { return false; }

// reserve_n with every tensor on buffer id 0 (the graphs here have fewer than 64 tensors)
bool reserve_on_first_id(ggml_gallocr_t galloc, ggml_cgraph* gf) {
  const std::vector<int> ids(64, 0);
  return ggml_gallocr_reserve_n(galloc, gf, ids.data(), ids.data());
}

// Section 6, on `buft` and the CPU's as the two buffer ids.
void reserve_then_alloc_keeps_what_is_read(ggml_backend_t cpu, ggml_backend_buffer_type_t buft, const std::string& on) {
  ggml_backend_buffer_type_t bufts[2] = {buft, ggml_backend_cpu_buffer_type()};
  check(galloc_ggml_share_begin(("two ids on " + on).c_str()), "share_begin (6)");
  ggml_gallocr_t producer_alloc = ggml_gallocr_new_n(bufts, 2);
  ggml_gallocr_t reader_alloc = ggml_gallocr_new_n(bufts, 2);
  check(galloc_ggml_share_end(), "share_end (6)");
  Producer producer;
  const bool produced =
      reserve_on_first_id(producer_alloc, producer.gf) && ggml_gallocr_alloc_graph(producer_alloc, producer.gf);
  check(produced, on + ": reserve_n and alloc the producer");
  if (produced) {
    set_values(producer.x, 1.0f);
    check(ggml_backend_graph_compute(cpu, producer.gf) == GGML_STATUS_SUCCESS, on + ": compute the producer");
    Reader reader(producer.out);  // needs more than the producer: its reserve grows the buffer
    check(reserve_on_first_id(reader_alloc, reader.gf), on + ": reserve_n the reader");
    const bool allocated = ggml_gallocr_alloc_graph(reader_alloc, reader.gf);
    check(allocated, on + ": alloc the reader after its reserve grew the buffer");
    if (allocated)
      check(reader.computes_exactly(cpu), on + ": the reader computes 3x + i*i from the producer's moved output");
  }
  ggml_gallocr_free(reader_alloc);
  ggml_gallocr_free(producer_alloc);
}

// Allocates and computes the producer; whether its output is 3x for x = 1, 2, ...
bool producer_computes_exactly(ggml_backend_t cpu, ggml_gallocr_t galloc, Producer& producer) {
  if (!ggml_gallocr_alloc_graph(galloc, producer.gf)) return false;
  set_values(producer.x, 1.0f);
  if (ggml_backend_graph_compute(cpu, producer.gf) != GGML_STATUS_SUCCESS) return false;
  const std::vector<float> got = values(producer.out);
  for (int i = 0; i < kElements; ++i) {
    if (got[static_cast<std::size_t>(i)] != 3.0f * (1.0f + static_cast<float>(i))) return false;
  }
  return true;
}

// Section 7: a group on host memory that a member on the device's buffer type joins.
void member_on_another_buffer_type(ggml_backend_t cpu) {
  const std::size_t from = warnings_so_far();
  check(galloc_ggml_share_begin("host and device"), "share_begin (7)");
  ggml_gallocr_t on_host = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
  ggml_gallocr_t on_device = ggml_gallocr_new(&device_type);
  ggml_gallocr_t on_device_too = ggml_gallocr_new(&device_type);
  check(galloc_ggml_share_end(), "share_end (7)");
  const std::string why = "share group 'host and device': a member on Device gets a compute buffer of its own";
  check(times_warned(why, from) == 1, "one warning that the member on Device has a buffer of its own, warned " +
                                          std::to_string(times_warned(why, from)) + " times");
  Producer a;
  Producer b;
  Producer c;
  check(producer_computes_exactly(cpu, on_host, a), "the member on host memory computes (7)");
  check(producer_computes_exactly(cpu, on_device, b), "the member on Device computes (7)");
  check(producer_computes_exactly(cpu, on_device_too, c), "the second member on Device computes (7)");
  check(producer_computes_exactly(cpu, on_host, a), "the member on host memory computes again (7)");
  check(a.out->buffer != b.out->buffer, "members on two buffer types must not share a buffer");
  check(b.out->buffer == c.out->buffer, "the two members on Device share one buffer");
  ggml_gallocr_free(on_device_too);
  ggml_gallocr_free(on_device);
  ggml_gallocr_free(on_host);
}

// Section 8: one group name opened on two threads at once, then one after the other.
void name_open_on_two_threads() {
  const std::string why = "share group 'one name' is open on another thread too";
  const auto open_and_close = [] {
    check(galloc_ggml_share_begin("one name"), "share_begin on a second thread (8)");
    check(galloc_ggml_share_end(), "share_end on a second thread (8)");
  };
  std::size_t from = warnings_so_far();
  check(galloc_ggml_share_begin("one name"), "share_begin (8)");
  std::thread(open_and_close).join();
  check(galloc_ggml_share_end(), "share_end (8)");
  check(times_warned(why, from) == 1, "a name open on two threads at once must be warned about once");
  from = warnings_so_far();
  std::thread(open_and_close).join();
  check(galloc_ggml_share_begin("one name"), "share_begin again (8)");
  check(galloc_ggml_share_end(), "share_end again (8)");
  check(times_warned(why, from) == 0, "a name opened on two threads one after the other must not be warned about");
}

// Whether two allocators made with GALLOC_SHARE=value (inside a share group or not) put their
// graphs in one buffer.
bool two_allocators_share(const char* value, bool in_group) {
  setenv("GALLOC_SHARE", value, 1);
  if (in_group) check(galloc_ggml_share_begin("modes"), std::string("share_begin with GALLOC_SHARE=") + value);
  ggml_gallocr_t first = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
  ggml_gallocr_t second = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
  if (in_group) check(galloc_ggml_share_end(), "share_end");
  unsetenv("GALLOC_SHARE");
  Producer a;
  Producer b;
  check(ggml_gallocr_alloc_graph(first, a.gf) && ggml_gallocr_alloc_graph(second, b.gf), "alloc two producers");
  const bool shared = a.out->buffer != nullptr && a.out->buffer == b.out->buffer;
  ggml_gallocr_free(first);
  ggml_gallocr_free(second);
  return shared;
}

}  // namespace

int main() {
  ggml_log_set(keep_warnings, nullptr);
  setenv("GALLOC_SHARE_CHECK", "1", 1);
  ggml_backend_t cpu = ggml_backend_cpu_init();
  ggml_backend_buffer_type_t buft = ggml_backend_cpu_buffer_type();

  // misuse of the share group: each is refused with a message in ggml's log
  check(!galloc_ggml_share_end(), "share_end with no group open must fail");
  check(!galloc_ggml_share_begin(nullptr), "share_begin(NULL) must fail");
  check(!galloc_ggml_share_begin(""), "share_begin(\"\") must fail");
  check(galloc_ggml_share_group() == nullptr, "no share group is open yet");
  check(galloc_ggml_share_begin("test"), "share_begin");
  check(!galloc_ggml_share_begin("again"), "a second share_begin on the thread must fail");
  check(galloc_ggml_share_group() != nullptr && std::string(galloc_ggml_share_group()) == "test",
        "share_group names the open group");
  check(galloc_ggml_share_generation("test") == 0, "a group without members is at generation 0");
  ggml_gallocr_t producer_alloc = ggml_gallocr_new(buft);
  ggml_gallocr_t consumer_alloc = ggml_gallocr_new(buft);
  ggml_gallocr_t large_alloc = ggml_gallocr_new(buft);
  ggml_gallocr_t reader_alloc = ggml_gallocr_new(buft);
  ggml_gallocr_t grower_alloc = ggml_gallocr_new(buft);
  check(galloc_ggml_share_end(), "share_end");
  check(galloc_ggml_share_group() == nullptr, "share_group after share_end");
  ggml_gallocr_t alone = ggml_gallocr_new(buft);  // after the group: a buffer of its own

  Producer producer;
  Large large;
  // The largest first, so that its alloc below covers the whole shared buffer.
  check(ggml_gallocr_reserve(large_alloc, large.gf), "reserve the large graph");
  check(ggml_gallocr_reserve(alone, producer.gf), "reserve the producer unshared");

  // 1. producer, then a consumer reading its output through a view: exact results.
  check(ggml_gallocr_alloc_graph(producer_alloc, producer.gf), "alloc the producer");
  check(ggml_gallocr_get_buffer_size(producer_alloc, 0) == ggml_gallocr_get_buffer_size(alone, 0),
        "a shared allocator reports its own need");
  set_values(producer.x, 1.0f);
  check(ggml_backend_graph_compute(cpu, producer.gf) == GGML_STATUS_SUCCESS, "compute the producer");
  {
    Reader consumer(producer.out);
    check(ggml_gallocr_alloc_graph(consumer_alloc, consumer.gf), "alloc the consumer");
    check(consumer.computes_exactly(cpu), "the consumer computes 3x + i*i from the producer's output, as unshared");
  }

  // 2. a violation: the large graph's alloc between the producer's alloc and its compute. The
  // group's generation says so (llama.cpp's graph reuse asks it); an allocator outside the
  // group does not change it.
  check(ggml_gallocr_alloc_graph(producer_alloc, producer.gf), "alloc the producer again");
  const unsigned long long after_producer = galloc_ggml_share_generation("test");
  check(after_producer != 0, "the group's generation after its members' allocs is not 0");
  check(ggml_gallocr_alloc_graph(alone, producer.gf), "alloc the producer's graph outside the group");
  check(galloc_ggml_share_generation("test") == after_producer, "an alloc outside the group changed its generation");
  check(ggml_gallocr_alloc_graph(producer_alloc, producer.gf), "alloc the producer a third time");
  const unsigned long long in_place = galloc_ggml_share_generation("test");
  check(in_place != after_producer, "the producer's own alloc did not change the generation");
  set_values(producer.x, 1.0f);
  check(ggml_gallocr_alloc_graph(large_alloc, large.gf), "alloc the large graph");
  check(galloc_ggml_share_generation("test") != in_place, "another member's alloc did not change the generation");
  check(galloc_ggml_share_generation("no such group") == 0, "a group that does not exist is at generation 0");
  check(ggml_backend_graph_compute(cpu, producer.gf) == GGML_STATUS_SUCCESS, "compute the producer out of turn");
  int nan = 0;
  for (float v : values(producer.out)) nan += std::isnan(v) ? 1 : 0;
  check(nan == kElements, "checked mode: computing out of turn gives NaN everywhere, got " + std::to_string(nan) +
                              " NaN of " + std::to_string(kElements));

  // 3. an allocator that read nothing from the shared buffer in its last allocs, then a graph of
  // another topology reading the producer's output: it is kept (exact results), or, where the
  // reader's own small graph took its memory over, the alloc says so instead of computing on it.
  check(ggml_gallocr_alloc_graph(producer_alloc, producer.gf), "alloc the producer (3)");
  set_values(producer.x, 1.0f);
  check(ggml_backend_graph_compute(cpu, producer.gf) == GGML_STATUS_SUCCESS, "compute the producer (3)");
  {
    ggml_context* ctx = new_context();
    ggml_tensor* t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 16);
    ggml_set_input(t);
    ggml_tensor* small = ggml_sqr(ctx, t);
    ggml_cgraph* gf = graph_of(ctx, small);
    for (int token = 0; token < 3; ++token) check(ggml_gallocr_alloc_graph(reader_alloc, gf), "alloc the small graph");
    const char* out_begin = static_cast<const char*>(producer.out->data);
    const char* out_end = out_begin + ggml_nbytes(producer.out);
    bool overlaps = false;
    for (ggml_tensor* own : {t, small}) {
      const char* begin = static_cast<const char*>(own->data);
      overlaps = overlaps || (begin < out_end && out_begin < begin + ggml_nbytes(own));
    }
    ggml_free(ctx);

    Reader reader(producer.out);
    const bool allocated = ggml_gallocr_alloc_graph(reader_alloc, reader.gf);
    if (overlaps) {
      check(!allocated, "a read of the producer's output after the reader's own graph took it over must fail");
    } else {
      check(allocated, "alloc the reader's graph of another topology");
      check(reader.computes_exactly(cpu),
            "the reader computes 3x + i*i from the producer's output after reading nothing for a while");
    }
    std::printf("3: the reader's small graph %s the producer's output\n", overlaps ? "took over" : "kept clear of");
  }

  // 4. a violation: another allocator's reserve grows the shared buffer between the producer's
  // alloc and the alloc of the graph reading its output, so the output is gone. The reader's
  // alloc fails instead of computing on freed memory; after the producer runs again, it works.
  check(ggml_gallocr_alloc_graph(producer_alloc, producer.gf), "alloc the producer (4)");
  set_values(producer.x, 1.0f);
  check(ggml_backend_graph_compute(cpu, producer.gf) == GGML_STATUS_SUCCESS, "compute the producer (4)");
  {
    ggml_context* ctx = new_context();
    ggml_tensor* z = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 64 * kElements);
    ggml_set_input(z);
    ggml_cgraph* gf = graph_of(ctx, ggml_sqr(ctx, ggml_sqr(ctx, z)));
    check(ggml_gallocr_reserve(grower_alloc, gf), "reserve a graph larger than the shared buffer");
    ggml_free(ctx);
  }
  {
    Reader reader(producer.out);
    check(!ggml_gallocr_alloc_graph(consumer_alloc, reader.gf),
          "a read of the producer's output after another allocator's reserve freed it must fail");
    check(ggml_gallocr_alloc_graph(producer_alloc, producer.gf), "alloc the producer again (4)");
    set_values(producer.x, 1.0f);
    check(ggml_backend_graph_compute(cpu, producer.gf) == GGML_STATUS_SUCCESS, "compute the producer again (4)");
    check(ggml_gallocr_alloc_graph(consumer_alloc, reader.gf), "alloc the reader after the producer ran (4)");
    check(reader.computes_exactly(cpu), "the reader computes 3x + i*i once the producer ran again");
  }

  // 5. who shares, by GALLOC_SHARE (which overrides the compile-time GALLOC_SHARE_DEFAULT)
  check(two_allocators_share("groups", true), "GALLOC_SHARE=groups: a share group shares");
  check(!two_allocators_share("groups", false), "GALLOC_SHARE=groups: outside a group, no sharing");
  check(two_allocators_share("1", false), "GALLOC_SHARE=1: every allocator shares");
  check(!two_allocators_share("0", true), "GALLOC_SHARE=0: not even a share group shares");
  check(two_allocators_share("yes", true) && !two_allocators_share("yes", false),
        "GALLOC_SHARE=yes (not a value): share groups only");

  // 6. two buffer ids, as ggml's scheduler has them (its backend and the CPU)
  reserve_then_alloc_keeps_what_is_read(cpu, buft, "host memory");
  device_type.iface.get_name = device_name;
  device_type.iface.alloc_buffer = device_alloc;
  device_type.iface.get_alignment = device_alignment;
  device_type.iface.is_host = device_is_host;
  device_type.device = ggml_backend_cpu_buffer_type()->device;
  reserve_then_alloc_keeps_what_is_read(cpu, &device_type, "a device");
  check(device_buffers.most_live == 1, "a device's shared buffer grew holding " +
                                           std::to_string(device_buffers.most_live) + " buffers at once, not 1");
  check(device_buffers.live == 0, "a device buffer left after the allocators were freed");

  // 7. a member on another buffer type than the group's
  member_on_another_buffer_type(cpu);
  check(device_buffers.live == 0, "a device buffer left after the allocators were freed (7)");

  // 8. one name, two threads
  name_open_on_two_threads();

  ggml_gallocr_free(grower_alloc);
  ggml_gallocr_free(producer_alloc);
  ggml_gallocr_free(reader_alloc);
  ggml_gallocr_free(consumer_alloc);
  ggml_gallocr_free(large_alloc);
  ggml_gallocr_free(alone);
  ggml_backend_free(cpu);
  if (failures != 0) return 1;
  std::printf("ok\n");
  return 0;
}
