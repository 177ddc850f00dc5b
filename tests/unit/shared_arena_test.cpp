// SharedArena: graph allocators whose graphs never run together share one compute buffer.
// Sizes (the largest member, not the sum), tensors another member reads kept in place, stale
// reads reported, checked mode, bad joins, members leaving, growth that never doubles.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "galloc/galloc.hpp"
#include "galloc/shared_arena.hpp"
#include "support/ggml_like_builder.hpp"

namespace galloc {
namespace {

using testing::GgmlLikeBuilder;

// x (input, n floats) -> a = scale(x) -> b = scale(a) -> o = add(b, a), output.
struct Producer {
  GgmlLikeBuilder builder;
  TensorId x = kNoTensor, o = kNoTensor;
  Graph& graph() { return builder.graph(); }
};

Producer producer(std::int64_t n) {
  Producer p;
  GgmlLikeBuilder& g = p.builder;
  p.x = g.input_1d(n);
  const TensorId a = g.scale(p.x);
  const TensorId b = g.scale(a);
  p.o = g.add(b, a);
  g.expand_output(p.o);
  return p;
}

// Reads `carried` (memory that exists: another graph's output) and computes from an input of
// its own: y = scale(x) -> z = scale(y) -> r = add(z, y); d = mul(carried, carried). Outputs r, d.
struct Consumer {
  GgmlLikeBuilder builder;
  TensorId carried = kNoTensor, x = kNoTensor, r = kNoTensor, d = kNoTensor;
  Graph& graph() { return builder.graph(); }
};

Consumer consumer(std::int64_t carried_n, std::int64_t n) {
  Consumer c;
  GgmlLikeBuilder& g = c.builder;
  c.carried = g.new_tensor_1d(DataType::F32, carried_n);
  g[c.carried].has_memory = true;
  c.x = g.input_1d(n);
  const TensorId y = g.scale(c.x);
  const TensorId z = g.scale(y);
  c.r = g.add(z, y);
  g.expand_output(c.r);
  c.d = g.mul(c.carried, c.carried);
  g.expand_output(c.d);
  return c;
}

Bytes own_size(const Graph& graph, const BufferType& type) {
  GraphAllocator alone({&type});
  EXPECT_TRUE(alone.reserve(graph).is_ok());
  return *alone.buffer_size(0);
}

// Writes `value` into every planned tensor of the graph that has no memory of its own now,
// as computing it would.
void compute(Graph& graph, const Plan& plan, unsigned char value) {
  for (std::size_t t = 0; t < graph.tensors.size(); ++t) {
    if (plan.tensors[t].planned() && !graph.tensors[t].has_memory && graph.tensors[t].data != nullptr) {
      std::memset(graph.tensors[t].data, value, tensor_nbytes(graph.tensors[t]));
    }
  }
}

bool all_bytes(const void* data, Bytes n, unsigned char value) {
  const auto* p = static_cast<const unsigned char*>(data);
  return std::all_of(p, p + n, [value](unsigned char b) { return b == value; });
}

TEST(SharedArena, HoldsTheLargestMembersNeedAndEachMemberReportsItsOwn) {
  NullBufferType type(64);
  auto arena = std::make_shared<SharedArena>(type, "test");
  std::vector<Producer> graphs;
  for (std::int64_t n : {100, 4000, 700}) graphs.push_back(producer(n));
  std::vector<GraphAllocator> members;
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    members.emplace_back(std::vector<const BufferType*>{&type});
    ASSERT_TRUE(members.back().join(0, arena, "graph " + std::to_string(i)).is_ok());
  }
  Bytes largest = 0;
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    ASSERT_TRUE(members[i].reserve(graphs[i].graph()).is_ok());
    const Bytes own = own_size(graphs[i].graph(), type);
    EXPECT_EQ(*members[i].buffer_size(0), own);
    largest = std::max(largest, own);
  }
  EXPECT_EQ(arena->size(), largest);
  EXPECT_EQ(arena->member_count(), 3u);
  for (std::size_t i = 0; i < graphs.size(); ++i) ASSERT_TRUE(members[i].alloc(graphs[i].graph()).is_ok());
  EXPECT_EQ(arena->size(), largest);
  // The own_size allocators above came and went; the members' buffers never exceeded the largest.
  EXPECT_LE(type.live_bytes(), largest);
}

// Real memory: the consumer's tensors are placed around the producer's output, which keeps
// its bytes while the consumer computes; the arena holds the larger member plus that output.
TEST(SharedArena, ATensorTheNextMemberReadsKeepsItsBytes) {
  CpuBufferType cpu(64);
  auto arena = std::make_shared<SharedArena>(cpu, "chain");
  Producer p = producer(1000);
  Consumer c = consumer(1000, 1200);
  GraphAllocator first({&cpu}), second({&cpu});
  ASSERT_TRUE(first.join(0, arena, "producer").is_ok());
  ASSERT_TRUE(second.join(0, arena, "consumer").is_ok());
  ASSERT_TRUE(first.reserve(p.graph()).is_ok());
  ASSERT_TRUE(second.reserve(c.graph()).is_ok());

  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(first.alloc(p.graph()).is_ok());
    compute(p.graph(), *first.plan(), 0x5A);
    Graph& cg = c.graph();
    cg[c.carried].data = p.graph()[p.o].data;
    ASSERT_TRUE(second.alloc(cg).is_ok());
    compute(cg, *second.plan(), 0x21);
    EXPECT_TRUE(all_bytes(cg[c.carried].data, tensor_nbytes(cg[c.carried]), 0x5A)) << "round " << round;
    EXPECT_TRUE(second.check_allocation().is_ok());
  }
  // The larger member plus what the consumer reads, not the sum of both.
  const Bytes own_p = own_size(p.graph(), cpu), own_c = own_size(c.graph(), cpu);
  const Bytes carried = align_up(tensor_nbytes(c.graph()[c.carried]), 64);
  EXPECT_LE(arena->size(), std::max(own_p, own_c) + carried);
  EXPECT_LT(arena->size(), own_p + own_c);
}

// A tensor the reserve planned that has memory by the alloc (the caller pointed it at another
// member's output since) is kept like memory that existed at reserve.
TEST(SharedArena, ATensorThatHasMemoryOnlyAtAllocIsKeptToo) {
  CpuBufferType cpu(64);
  auto arena = std::make_shared<SharedArena>(cpu, "late");
  Producer p = producer(1000);
  Consumer c = consumer(1000, 1200);
  Graph& cg = c.graph();
  cg[c.carried].has_memory = false;
  GraphAllocator first({&cpu}), second({&cpu});
  ASSERT_TRUE(first.join(0, arena, "producer").is_ok());
  ASSERT_TRUE(second.join(0, arena, "consumer").is_ok());
  ASSERT_TRUE(first.reserve(p.graph()).is_ok());
  ASSERT_TRUE(second.reserve(cg).is_ok());
  ASSERT_TRUE(second.plan()->tensors[static_cast<std::size_t>(c.carried)].planned());

  ASSERT_TRUE(first.alloc(p.graph()).is_ok());
  compute(p.graph(), *first.plan(), 0x5A);
  cg[c.carried].has_memory = true;
  cg[c.carried].data = p.graph()[p.o].data;
  ASSERT_FALSE(second.needs_reserve(cg));
  ASSERT_TRUE(second.alloc(cg).is_ok());
  compute(cg, *second.plan(), 0x21);
  EXPECT_TRUE(all_bytes(cg[c.carried].data, tensor_nbytes(cg[c.carried]), 0x5A));
}

// The same through a view: its root has memory only by the alloc (the walk reads a view's
// root too, so the reservation check sees it), and what the view reads of it is kept.
TEST(SharedArena, AViewOfARootThatHasMemoryOnlyAtAllocIsKeptToo) {
  CpuBufferType cpu(64);
  auto arena = std::make_shared<SharedArena>(cpu, "late-view");
  Producer p = producer(1000);
  GgmlLikeBuilder g;
  const TensorId root = g.new_tensor_1d(DataType::F32, 1000);
  const TensorId view = g.view_1d(root, 1000, 0);
  // large enough that, placed at offset 0, it would cover the producer's output
  const TensorId x = g.input_1d(4000);
  const TensorId y = g.scale(x);
  g.expand_output(g.add(g.scale(y), y));
  const TensorId d = g.mul(view, view);
  g.expand_output(d);
  Graph& cg = g.graph();
  GraphAllocator first({&cpu}), second({&cpu});
  ASSERT_TRUE(first.join(0, arena, "producer").is_ok());
  ASSERT_TRUE(second.join(0, arena, "consumer").is_ok());
  ASSERT_TRUE(first.reserve(p.graph()).is_ok());
  ASSERT_TRUE(second.reserve(cg).is_ok());

  ASSERT_TRUE(first.alloc(p.graph()).is_ok());
  compute(p.graph(), *first.plan(), 0x5A);
  cg[root].has_memory = true;
  cg[root].data = p.graph()[p.o].data;
  ASSERT_FALSE(second.needs_reserve(cg));
  ASSERT_TRUE(second.alloc(cg).is_ok());
  compute(cg, *second.plan(), 0x21);
  EXPECT_TRUE(all_bytes(cg[root].data, tensor_nbytes(cg[root]), 0x5A));
}

// A member that allocates again with nothing else in the arena changed (a decoder, token by
// token) keeps its placement without placing again: the arena's generation stays. After
// another member's alloc it places again.
TEST(SharedArena, AMemberAllocatingAgainKeepsItsPlacementUntilAnotherAllocates) {
  CpuBufferType cpu(64);
  auto arena = std::make_shared<SharedArena>(cpu, "again");
  Producer p = producer(1000), q = producer(700);
  GraphAllocator first({&cpu}), second({&cpu});
  ASSERT_TRUE(first.join(0, arena, "first").is_ok());
  ASSERT_TRUE(second.join(0, arena, "second").is_ok());
  ASSERT_TRUE(first.alloc(p.graph()).is_ok());
  const std::uint64_t placed = arena->generation();
  void* output = p.graph()[p.o].data;
  for (int token = 0; token < 3; ++token) {
    ASSERT_TRUE(first.alloc(p.graph()).is_ok());
    EXPECT_EQ(arena->generation(), placed);
    EXPECT_EQ(p.graph()[p.o].data, output);
    EXPECT_TRUE(first.check_allocation().is_ok());
  }
  ASSERT_TRUE(second.alloc(q.graph()).is_ok());
  EXPECT_FALSE(first.check_allocation().is_ok());
  const std::uint64_t after_second = arena->generation();
  EXPECT_NE(after_second, placed);
  ASSERT_TRUE(first.alloc(p.graph()).is_ok());
  EXPECT_NE(arena->generation(), after_second);
  EXPECT_TRUE(first.check_allocation().is_ok());
}

// A tensor that another member's alloc partly took over since it was written is reported.
// `first` allocates the producer's graph, then `intruder` a graph whose memory (from offset 0,
// as every member's) ends in the middle of the producer's output. The output's bytes.
Bytes take_over_half_the_output(GraphAllocator& first, GraphAllocator& intruder, Producer& p) {
  EXPECT_TRUE(first.alloc(p.graph()).is_ok());
  auto* base = first.chunks(0).at(0)->base();
  auto* output = static_cast<std::byte*>(p.graph()[p.o].data);
  const Bytes output_bytes = tensor_nbytes(p.graph()[p.o]);
  const Bytes cut = (static_cast<Bytes>(output - base) + output_bytes / 2) / 64 * 64;
  GgmlLikeBuilder big;
  big.expand_output(big.input_with_size(cut));
  EXPECT_TRUE(intruder.alloc(big.graph()).is_ok());
  return output_bytes;
}

TEST(SharedArena, AReadOfMemoryAnotherMemberTookOverIsAnError) {
  CpuBufferType cpu(64);
  auto arena = std::make_shared<SharedArena>(cpu, "stale");
  Producer p = producer(1000);
  GraphAllocator first({&cpu}), intruder({&cpu}), second({&cpu});
  ASSERT_TRUE(first.join(0, arena, "producer").is_ok());
  ASSERT_TRUE(intruder.join(0, arena, "intruder").is_ok());
  ASSERT_TRUE(second.join(0, arena, "consumer").is_ok());
  const Bytes output_bytes = take_over_half_the_output(first, intruder, p);
  void* const output = p.graph()[p.o].data;

  Consumer c = consumer(static_cast<std::int64_t>(output_bytes / 4), 10);
  c.graph()[c.carried].data = output;
  const Status s = second.alloc(c.graph());
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("shared arena 'stale'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("consumer"), std::string::npos) << s.message();
  // The others keep working.
  EXPECT_TRUE(first.alloc(p.graph()).is_ok());
  c.graph()[c.carried].data = p.graph()[p.o].data;
  EXPECT_TRUE(second.alloc(c.graph()).is_ok());
}

// A member whose graph reads what only its own last placement held (another member has taken
// it over since) places itself again: its own earlier tensors are not another member's output.
TEST(SharedArena, AReadOfTheMembersOwnTakenOverPlacementIsNoStaleRead) {
  CpuBufferType cpu(64);
  auto arena = std::make_shared<SharedArena>(cpu, "own");
  Producer p = producer(1000);
  GraphAllocator first({&cpu}), intruder({&cpu});
  ASSERT_TRUE(first.join(0, arena, "producer").is_ok());
  ASSERT_TRUE(intruder.join(0, arena, "intruder").is_ok());
  const Bytes output_bytes = take_over_half_the_output(first, intruder, p);
  void* const output = p.graph()[p.o].data;

  // The producer's allocator, now with a graph that names its own earlier output.
  Consumer c = consumer(static_cast<std::int64_t>(output_bytes / 4), 10);
  c.graph()[c.carried].data = output;
  const Status s = first.alloc(c.graph());
  EXPECT_TRUE(s.is_ok()) << s.message();
  EXPECT_TRUE(first.check_allocation().is_ok());
}

// A reserve by the reader itself, called directly between its writer's alloc and its own
// alloc (as ggml's scheduler reserves before allocating a new graph), keeps what it reads:
// carried over to the grown chunk, whose old one is freed first.
TEST(SharedArena, AReadersOwnReserveBetweenRunsKeepsWhatItReads) {
  CpuBufferType cpu(64);
  auto arena = std::make_shared<SharedArena>(cpu, "between");
  Producer p = producer(1000);
  Consumer small = consumer(1000, 1200), large = consumer(1000, 20000);
  GraphAllocator first({&cpu}), second({&cpu});
  ASSERT_TRUE(first.join(0, arena, "producer").is_ok());
  ASSERT_TRUE(second.join(0, arena, "consumer").is_ok());
  ASSERT_TRUE(first.reserve(p.graph()).is_ok());
  ASSERT_TRUE(second.reserve(small.graph()).is_ok());
  ASSERT_TRUE(first.alloc(p.graph()).is_ok());
  compute(p.graph(), *first.plan(), 0x5A);

  Graph& cg = large.graph();
  cg[large.carried].data = p.graph()[p.o].data;
  ASSERT_TRUE(second.reserve(cg).is_ok());  // grows the arena
  EXPECT_EQ(arena->buffers().size(), 1u) << "the old chunk is freed, not kept";
  ASSERT_TRUE(second.alloc(cg).is_ok());
  compute(cg, *second.plan(), 0x21);
  EXPECT_TRUE(all_bytes(cg[large.carried].data, tensor_nbytes(cg[large.carried]), 0x5A));
  EXPECT_NE(cg[large.carried].data, p.graph()[p.o].data) << "moved into the grown chunk";
}

// A reserve between runs frees the old chunk first, as ggml does.
TEST(SharedArena, AReserveBetweenRunsFreesTheOldChunkFirst) {
  NullBufferType type(64);
  auto arena = std::make_shared<SharedArena>(type, "first");
  Producer small = producer(1000), large = producer(100000);
  GraphAllocator a({&type}), b({&type});
  ASSERT_TRUE(a.join(0, arena).is_ok());
  ASSERT_TRUE(b.join(0, arena).is_ok());
  ASSERT_TRUE(a.reserve(small.graph()).is_ok());
  ASSERT_TRUE(b.reserve(large.graph()).is_ok());
  EXPECT_EQ(type.peak_bytes(), *b.buffer_size(0));
  EXPECT_EQ(arena->buffers().size(), 1u);
}

// An adapter that names the tensors of its graph lying in an arena (AllocSink::tensors_in_arena,
// as the ggml drop-in does) gets the same as one that does not: what the member reads is kept,
// and a read of memory another member took over since is an error.
TEST(SharedArena, AnAdapterNamingTheTensorsInTheArenaGetsTheSameKeepingAndChecks) {
  struct NamingSink final : AllocSink {
    Graph* graph = nullptr;
    std::vector<TensorId> in_arena;
    Status place(TensorId id, const TensorAddress* address) override {
      if (address != nullptr) (*graph)[id].data = address->data;
      return Status::ok();
    }
    [[nodiscard]] const std::vector<TensorId>* tensors_in_arena() const override { return &in_arena; }
  };
  CpuBufferType cpu(64);
  auto arena = std::make_shared<SharedArena>(cpu, "named");
  Producer p = producer(1000);
  Consumer c = consumer(1000, 1200);
  GraphAllocator first({&cpu}), intruder({&cpu}), second({&cpu});
  ASSERT_TRUE(first.join(0, arena, "producer").is_ok());
  ASSERT_TRUE(intruder.join(0, arena, "intruder").is_ok());
  ASSERT_TRUE(second.join(0, arena, "consumer").is_ok());
  ASSERT_TRUE(first.reserve(p.graph()).is_ok());
  ASSERT_TRUE(second.reserve(c.graph()).is_ok());
  Graph& cg = c.graph();
  NamingSink sink;
  sink.graph = &cg;
  sink.in_arena = {c.carried};
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(first.alloc(p.graph()).is_ok());
    compute(p.graph(), *first.plan(), 0x5A);
    cg[c.carried].data = p.graph()[p.o].data;
    ASSERT_TRUE(second.alloc(cg, sink).is_ok());
    compute(cg, *second.plan(), 0x21);
    EXPECT_TRUE(all_bytes(cg[c.carried].data, tensor_nbytes(cg[c.carried]), 0x5A)) << "round " << round;
  }
  // The intruder's memory (from offset 0) ends in the middle of what the consumer reads.
  auto* base = second.chunks(0).at(0)->base();
  auto* carried = static_cast<std::byte*>(cg[c.carried].data);
  ASSERT_GE(carried, base);
  const Bytes cut = (static_cast<Bytes>(carried - base) + tensor_nbytes(cg[c.carried]) / 2) / 64 * 64;
  GgmlLikeBuilder big;
  big.expand_output(big.input_with_size(cut));
  ASSERT_TRUE(intruder.alloc(big.graph()).is_ok());
  const Status s = second.alloc(cg, sink);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("shared arena 'named'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("consumer"), std::string::npos) << s.message();
}

// Checked mode: the memory an alloc takes over from another member is poisoned, so a member
// that computes after someone else's alloc reads NaN; check_allocation says so too.
TEST(SharedArena, CheckedModePoisonsWhatAnAllocTakesOver) {
  CpuBufferType cpu(64);
  auto arena = std::make_shared<SharedArena>(cpu, "checked");
  arena->set_checked(true);
  Producer a = producer(500);
  Producer b = producer(500);
  GraphAllocator first({&cpu}), second({&cpu});
  ASSERT_TRUE(first.join(0, arena, "a").is_ok());
  ASSERT_TRUE(second.join(0, arena, "b").is_ok());
  ASSERT_TRUE(first.alloc(a.graph()).is_ok());
  EXPECT_TRUE(first.check_allocation().is_ok());
  std::memset(a.graph()[a.x].data, 0x11, tensor_nbytes(a.graph()[a.x]));  // a's input, set by the app
  ASSERT_TRUE(second.alloc(b.graph()).is_ok());                           // b's alloc before a computes: a violation
  EXPECT_TRUE(all_bytes(a.graph()[a.x].data, tensor_nbytes(a.graph()[a.x]), 0xFF));
  const Status stale = first.check_allocation();
  ASSERT_FALSE(stale.is_ok());
  EXPECT_NE(stale.message().find("shared arena 'checked'"), std::string::npos) << stale.message();
  EXPECT_TRUE(second.check_allocation().is_ok());
}

TEST(SharedArena, BadJoinsAreErrors) {
  CpuBufferType cpu(64);
  CpuBufferType other(128, kUnlimited, "GPU");
  auto arena = std::make_shared<SharedArena>(cpu, "cpu-arena");
  GraphAllocator wrong_type({&other});
  const Status s = wrong_type.join(0, arena);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("GPU"), std::string::npos) << s.message();
  EXPECT_EQ(arena->member_count(), 0u);

  GraphAllocator twice({&cpu});
  ASSERT_TRUE(twice.join(0, arena).is_ok());
  EXPECT_FALSE(twice.join(0, arena).is_ok());
  EXPECT_FALSE(twice.join(1, arena).is_ok());
  EXPECT_FALSE(twice.join(0, nullptr).is_ok());

  Producer p = producer(100);
  GraphAllocator late({&cpu});
  ASSERT_TRUE(late.reserve(p.graph()).is_ok());
  EXPECT_FALSE(late.join(0, arena).is_ok());
}

// A member that is freed leaves: its memory is nobody's, reading it is an error, and the
// others keep allocating; the arena's buffers go when the last member and handle do.
TEST(SharedArena, AFreedMemberLeavesAndTheOthersKeepWorking) {
  NullBufferType type(64);
  auto arena = std::make_shared<SharedArena>(type, "leave");
  Producer a = producer(300), b = producer(3000);
  auto first = std::make_unique<GraphAllocator>(std::vector<const BufferType*>{&type});
  GraphAllocator second({&type});
  ASSERT_TRUE(first->join(0, arena).is_ok());
  ASSERT_TRUE(second.join(0, arena).is_ok());
  ASSERT_TRUE(first->alloc(a.graph()).is_ok());
  GraphAllocator moved = std::move(*first);  // membership moves with the allocator
  first.reset();
  EXPECT_EQ(arena->member_count(), 2u);
  ASSERT_TRUE(second.alloc(b.graph()).is_ok());
  ASSERT_TRUE(moved.alloc(a.graph()).is_ok());
  { GraphAllocator gone = std::move(moved); }
  EXPECT_EQ(arena->member_count(), 1u);
  ASSERT_TRUE(second.alloc(b.graph()).is_ok());
  arena.reset();  // the member still holds the arena
  ASSERT_TRUE(second.alloc(b.graph()).is_ok());
  EXPECT_GT(type.live_bytes(), 0u);
}

// Growing frees the old chunk first (stock's rule): a small member then a large one never
// hold both sizes at once.
TEST(SharedArena, GrowingNeverHoldsTheOldAndTheNewChunkAtOnce) {
  NullBufferType type(64);
  auto arena = std::make_shared<SharedArena>(type, "grow");
  Producer small = producer(1000), large = producer(100000);
  GraphAllocator a({&type}), b({&type});
  ASSERT_TRUE(a.join(0, arena).is_ok());
  ASSERT_TRUE(b.join(0, arena).is_ok());
  ASSERT_TRUE(a.alloc(small.graph()).is_ok());
  ASSERT_TRUE(b.alloc(large.graph()).is_ok());
  EXPECT_FALSE(a.check_allocation().is_ok());  // its chunk is gone
  EXPECT_EQ(type.peak_bytes(), *b.buffer_size(0));
  EXPECT_EQ(arena->size(), *b.buffer_size(0));
  EXPECT_EQ(arena->growth_count(), 2u);
}

// The arena's own calls, with ranges chosen so that the reader does not fit beside what it
// reads: 1024 bytes, a writer over all of them, a reader of 960 bytes reading 64 in the middle.
struct Crowded {
  explicit Crowded(const BufferType& type) : arena(type, "crowded") {
    writer = arena.add_member("writer");
    reader = arena.add_member("reader");
  }
  SharedArena arena;
  SharedArena::MemberId writer = 0, reader = 0;
};

// Host memory: what the reader reads is moved to the chunk's end, bytes and all, and the
// reader goes at the start; nothing grows.
TEST(SharedArena, WhatTheReaderReadsIsMovedOutOfItsWay) {
  CpuBufferType cpu(64);
  Crowded c(cpu);
  ASSERT_TRUE(c.arena.reserve(c.writer, {1024}).is_ok());
  ASSERT_TRUE(c.arena.reserve(c.reader, {960}, {}, 64).is_ok());
  EXPECT_EQ(c.arena.size(), 1024u);
  auto written = c.arena.place(c.writer, {1024}, {});
  ASSERT_TRUE(written.is_ok());
  std::byte* base = written->chunks.at(0).base;
  std::memset(base + 512, 0x5A, 64);
  auto read = c.arena.place(c.reader, {960}, {{base + 512, base + 576}});
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  ASSERT_EQ(read->moves.size(), 1u);
  EXPECT_EQ(read->moves[0].from.begin, base + 512);
  EXPECT_EQ(read->moves[0].to, base + 960);
  EXPECT_EQ(read->chunks.at(0).base, base);
  EXPECT_TRUE(all_bytes(base + 960, 64, 0x5A));
  EXPECT_EQ(c.arena.growth_count(), 1u);
  // The moved bytes are still the writer's: a third member may read them where they are now.
  const SharedArena::MemberId third = c.arena.add_member("third");
  EXPECT_TRUE(c.arena.place(third, {64}, {{base + 960, base + 1024}}).is_ok());
}

// Host memory that counts what it holds, to see that a regrowth never holds two chunks.
class CountingCpuType final : public BufferType {
 public:
  [[nodiscard]] std::string name() const override { return "CPU"; }
  [[nodiscard]] Bytes alignment() const override { return 64; }
  [[nodiscard]] Result<std::unique_ptr<Buffer>> allocate(Bytes size) const override {
    auto inner = cpu_.allocate(size);
    if (!inner) return inner.status();
    live_ += size;
    peak_ = std::max(peak_, live_);
    return std::unique_ptr<Buffer>(std::make_unique<Counted>(*this, std::move(inner).value()));
  }
  [[nodiscard]] Bytes peak() const { return peak_; }
  [[nodiscard]] Bytes live() const { return live_; }

 private:
  class Counted final : public Buffer {
   public:
    Counted(const CountingCpuType& type, std::unique_ptr<Buffer> inner) : type_(type), inner_(std::move(inner)) {}
    ~Counted() override { type_.live_ -= inner_->size(); }
    std::byte* base() override { return inner_->base(); }
    [[nodiscard]] Bytes size() const override { return inner_->size(); }
    [[nodiscard]] const BufferType& type() const override { return type_; }
    bool read(Offset offset, Bytes size, void* out) override { return inner_->read(offset, size, out); }
    bool write(Offset offset, Bytes size, const void* in) override { return inner_->write(offset, size, in); }

   private:
    const CountingCpuType& type_;
    std::unique_ptr<Buffer> inner_;
  };
  CpuBufferType cpu_{64};
  mutable Bytes live_ = 0;
  mutable Bytes peak_ = 0;
};

// A reader that needs the whole chunk: the chunk grows, what it reads is carried over to the
// new chunk's end, and the old chunk is freed before the new one is allocated.
TEST(SharedArena, GrowingCarriesWhatTheReaderReadsWithoutHoldingTwoChunks) {
  CountingCpuType type;
  Crowded c(type);
  auto written = c.arena.place(c.writer, {1024}, {});
  ASSERT_TRUE(written.is_ok());
  std::byte* base = written->chunks.at(0).base;
  std::memset(base + 512, 0x5A, 64);
  auto read = c.arena.place(c.reader, {1024}, {{base + 512, base + 576}});
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  EXPECT_EQ(c.arena.size(), 1024u + 64u);
  EXPECT_EQ(type.peak(), 1024u + 64u);
  ASSERT_EQ(read->moves.size(), 1u);
  std::byte* now = read->moves[0].to;
  EXPECT_EQ(now, read->chunks.at(0).base + 1024);
  EXPECT_TRUE(all_bytes(now, 64, 0x5A));
}

// Memory that cannot be moved from here (NullBufferType): the chunk grows, and the old one is
// kept while the reader runs and freed at the next alloc that reads nothing from it.
TEST(SharedArena, WhatCannotMoveKeepsTheOldChunkUntilNothingReadsIt) {
  NullBufferType type(64);
  Crowded c(type);
  ASSERT_TRUE(c.arena.reserve(c.writer, {1024}).is_ok());
  auto written = c.arena.place(c.writer, {1024}, {});
  ASSERT_TRUE(written.is_ok());
  std::byte* base = written->chunks.at(0).base;
  auto read = c.arena.place(c.reader, {960}, {{base + 512, base + 576}});
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  EXPECT_TRUE(read->moves.empty());
  const Bytes grown = c.arena.size();
  EXPECT_GE(grown, 960u + 64u);
  EXPECT_EQ(type.live_bytes(), 1024u + grown);  // the old chunk, retired, and the new one
  ASSERT_TRUE(c.arena.place(c.writer, {1024}, {}).is_ok());
  EXPECT_EQ(type.live_bytes(), grown);
}

// An adapter keeps the arena's buffers while buffers_epoch() stands: it moves when a chunk is
// allocated, retired or freed, and not at places that leave the chunks as they are.
TEST(SharedArena, TheBuffersEpochMovesOnlyWithTheBuffers) {
  NullBufferType type(64);
  Crowded c(type);
  ASSERT_TRUE(c.arena.reserve(c.writer, {1024}).is_ok());
  const std::uint64_t reserved = c.arena.buffers_epoch();
  auto written = c.arena.place(c.writer, {1024}, {});
  ASSERT_TRUE(written.is_ok());
  ASSERT_TRUE(c.arena.place(c.reader, {512}, {}).is_ok());
  ASSERT_TRUE(c.arena.place(c.writer, {1024}, {}).is_ok());
  EXPECT_EQ(c.arena.buffers_epoch(), reserved);
  EXPECT_EQ(c.arena.buffers().size(), 1u);
  auto again = c.arena.place(c.writer, {1024}, {});
  ASSERT_TRUE(again.is_ok());
  std::byte* base = again->chunks.at(0).base;
  ASSERT_TRUE(c.arena.place(c.reader, {960}, {{base + 512, base + 576}}).is_ok());  // grows, retires
  const std::uint64_t grown = c.arena.buffers_epoch();
  EXPECT_NE(grown, reserved);
  EXPECT_EQ(c.arena.buffers().size(), 2u);
  ASSERT_TRUE(c.arena.place(c.writer, {1024}, {}).is_ok());  // frees the retired chunk
  EXPECT_NE(c.arena.buffers_epoch(), grown);
  EXPECT_EQ(c.arena.buffers().size(), 1u);
}

// A place given what the member's last place was given, in the arena as that place found it
// (whisper's encoder after its conv graph, every time), comes out the same; any change in
// between (another member's memory, a chunk that grew) is worked out again, stale reads
// included.
TEST(SharedArena, APlaceIsRepeatedOnlyInTheArenaItFoundBefore) {
  CpuBufferType cpu(64);
  Crowded c(cpu);
  ASSERT_TRUE(c.arena.reserve(c.writer, {1024}).is_ok());
  std::byte* base = nullptr;
  for (int round = 0; round < 3; ++round) {
    auto written = c.arena.place(c.writer, {1024}, {});
    ASSERT_TRUE(written.is_ok());
    base = written->chunks.at(0).base;
    auto read = c.arena.place(c.reader, {512}, {{base + 256, base + 320}});
    ASSERT_TRUE(read.is_ok()) << read.status().message();
    EXPECT_EQ(read->chunks.at(0).base, base + 320) << "round " << round;  // the lowest offset clear of the read
    EXPECT_TRUE(read->moves.empty());
    EXPECT_TRUE(c.arena.holds(c.reader));
    EXPECT_FALSE(c.arena.holds(c.writer));
  }
  // An intruder takes over part of what the reader reads, between the writer and the reader.
  const SharedArena::MemberId intruder = c.arena.add_member("intruder");
  ASSERT_TRUE(c.arena.place(c.writer, {1024}, {}).is_ok());
  ASSERT_TRUE(c.arena.place(intruder, {300}, {}).is_ok());
  const Status stale = c.arena.place(c.reader, {512}, {{base + 256, base + 320}}).status();
  EXPECT_FALSE(stale.is_ok());
  EXPECT_NE(stale.message().find("no single member holds"), std::string::npos) << stale.message();
  // The same sequence as before places as before.
  ASSERT_TRUE(c.arena.place(c.writer, {1024}, {}).is_ok());
  auto again = c.arena.place(c.reader, {512}, {{base + 256, base + 320}});
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  EXPECT_EQ(again->chunks.at(0).base, base + 320);
  // A larger chunk: the reader goes where the new chunk has room.
  ASSERT_TRUE(c.arena.reserve(c.writer, {4096}).is_ok());
  auto grown = c.arena.place(c.writer, {4096}, {});
  ASSERT_TRUE(grown.is_ok());
  std::byte* grown_base = grown->chunks.at(0).base;
  auto moved_on = c.arena.place(c.reader, {512}, {{grown_base + 256, grown_base + 320}});
  ASSERT_TRUE(moved_on.is_ok()) << moved_on.status().message();
  EXPECT_EQ(moved_on->chunks.at(0).base, grown_base + 320);
  EXPECT_TRUE(c.arena.holds(c.reader));
}

// Chunks: with a max size the member's chunks map to the arena's chunks one by one.
TEST(SharedArena, ChunkedMembersShareChunkByChunk) {
  CpuBufferType cpu(64, 8192);
  auto arena = std::make_shared<SharedArena>(cpu, "chunks");
  Producer a = producer(1500), b = producer(1800);
  GraphAllocator first({&cpu}), second({&cpu});
  ASSERT_TRUE(first.join(0, arena).is_ok());
  ASSERT_TRUE(second.join(0, arena).is_ok());
  ASSERT_TRUE(first.alloc(a.graph()).is_ok());
  ASSERT_TRUE(second.alloc(b.graph()).is_ok());
  ASSERT_GT(second.plan()->buffers[0].chunk_sizes.size(), 1u);
  const auto chunks = second.chunks(0);
  ASSERT_EQ(chunks.size(), second.plan()->buffers[0].chunk_sizes.size());
  for (std::size_t t = 0; t < b.graph().tensors.size(); ++t) {
    const TensorPlacement& slot = second.plan()->tensors[t];
    if (!slot.planned()) continue;
    auto* data = static_cast<std::byte*>(b.graph().tensors[t].data);
    Buffer* chunk = chunks[static_cast<std::size_t>(slot.chunk)];
    EXPECT_GE(data, chunk->base());
    EXPECT_LE(data + slot.size, chunk->base() + chunk->size());
  }
  EXPECT_EQ(arena->chunk_sizes().size(), chunks.size());
}

// Arenas are independent: members of two arenas allocate on two threads at once (run under
// TSan by `make tsan-test`).
TEST(SharedArena, MembersOfDifferentArenasAllocateOnDifferentThreads) {
  CpuBufferType cpu(64);
  auto run = [&cpu](std::int64_t n, bool* ok) {
    auto arena = std::make_shared<SharedArena>(cpu, "thread");
    Producer a = producer(n), b = producer(2 * n);
    GraphAllocator first({&cpu}), second({&cpu});
    *ok = first.join(0, arena).is_ok() && second.join(0, arena).is_ok();
    for (int i = 0; i < 200 && *ok; ++i) {
      *ok = first.alloc(a.graph()).is_ok() && second.alloc(b.graph()).is_ok();
    }
  };
  bool ok1 = false, ok2 = false;
  std::thread t1(run, 300, &ok1), t2(run, 500, &ok2);
  t1.join();
  t2.join();
  EXPECT_TRUE(ok1);
  EXPECT_TRUE(ok2);
}

}  // namespace
}  // namespace galloc
