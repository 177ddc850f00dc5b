// Memory timelines: the ASCII drawing compared character for character on tiny graphs, the
// overlap mark on a broken placement, tail extents, and the HTML page's DOM hooks.
#include <gtest/gtest.h>

#include <regex>

#include "galloc/planner.hpp"
#include "galloc/timeline.hpp"
#include "galloc/validator.hpp"
#include "support/random_graph.hpp"

namespace galloc {
namespace {

// Six f32 tensors, buffer alignment 16 (every size below is a multiple):
//
//   x (input, 32 B) ─┬─> mm = mul_mat(x, x) (64 B) ─> scaled (in place) ─┐
//                    └─> copy = cont(x) (32 B) ──────────────────────────┴─> sum (in place over scaled)
//   sum ─> out = mul_mat(sum, sum) (16 B, output)
//
// ggml's walk: x at step 0, mm at 1, copy at 2, free x at 3, free copy at 4, out at 5, free
// the mm/scaled/sum storage at 6. Best fit puts x at 0, mm at 32, copy at 96, and out at 0.
struct TimelineTiny : ::testing::Test {
  Graph g;
  NullBufferType type{16, kUnlimited, "test"};
  std::vector<const BufferType*> types{&type};

  void SetUp() override {
    const TensorId x = g.add_leaf(g.new_tensor("x", DataType::F32, {8}));
    g[x].flags |= kFlagInput;
    const TensorId mm = g.add_node(g.new_op("mm", Op::MulMat, DataType::F32, {16}, {x, x}));
    const TensorId scaled = g.add_node(g.new_op("scaled", Op::Scale, DataType::F32, {16}, {mm}));
    const TensorId copy = g.add_node(g.new_op("copy", Op::Cont, DataType::F32, {8}, {x}));
    const TensorId sum = g.add_node(g.new_op("sum", Op::Add, DataType::F32, {16}, {scaled, copy}));
    const TensorId out = g.add_node(g.new_op("out", Op::MulMat, DataType::F32, {4}, {sum, sum}));
    g[out].flags |= kFlagOutput;
  }

  PlanningResult plan() {
    auto result = plan_graph(g, types, {}, {.strategy = Strategy::kGgml, .exact = {}});
    EXPECT_TRUE(result.is_ok()) << result.status().to_string();
    return std::move(result).value();
  }
};

TEST_F(TimelineTiny, RowPerNode) {
  const PlanningResult result = plan();
  EXPECT_EQ(draw_timeline(g, result, {.columns = 16}),
            "buffer 0 'test': 1 chunk, 128 bytes; lower bound 128 bytes; 8 bytes per column\n"
            "legend: a=x b=mm+scaled+sum c=copy d=out\n"
            "node        |chunk 0         | live\n"
            "   0 mm     |aaaabbbbbbbb....|   96\n"
            "   1 scaled |aaaabbbbbbbb....|   96\n"
            "   2 copy   |aaaabbbbbbbbcccc|  128 peak\n"
            "   3 sum    |....bbbbbbbbcccc|   96\n"
            "   4 out    |dd..bbbbbbbb....|   80\n");
}

TEST_F(TimelineTiny, RowPerStep) {
  const PlanningResult result = plan();
  EXPECT_EQ(draw_timeline(g, result, {.columns = 16, .rows = TimelineRows::kSteps}),
            "buffer 0 'test': 1 chunk, 128 bytes; lower bound 128 bytes; 8 bytes per column\n"
            "legend: a=x b=mm+scaled+sum c=copy d=out\n"
            "step             |chunk 0         | live\n"
            "   0 alloc a     |aaaa............|   32\n"
            "   1 alloc b     |aaaabbbbbbbb....|   96\n"
            "   2 alloc c     |aaaabbbbbbbbcccc|  128 peak\n"
            "   3 free  a     |....bbbbbbbbcccc|   96\n"
            "   4 free  c     |....bbbbbbbb....|   64\n"
            "   5 alloc d     |dd..bbbbbbbb....|   80\n"
            "   6 free  b     |dd..............|   16\n");
}

TEST_F(TimelineTiny, DefaultIsSixtyFourColumns) {
  const PlanningResult result = plan();
  const std::string text = draw_timeline(g, result);
  EXPECT_NE(text.find("2 bytes per column"), std::string::npos) << text;
  EXPECT_NE(text.find("|" + std::string(16, 'a') + std::string(32, 'b') + std::string(16, 'c') + "|  128 peak"),
            std::string::npos)
      << text;
}

// Moving `copy` onto `mm` breaks the placement: the shared bytes [32, 64) are drawn as '!'
// while both are live, and the validator agrees.
TEST_F(TimelineTiny, OverlapIsMarked) {
  PlanningResult result = plan();
  const auto copy =
      static_cast<std::size_t>(result.lifetimes.tensor_storage[static_cast<std::size_t>(*g.find("copy"))]);
  result.placement.storage_address[copy].offset = 32;
  ASSERT_FALSE(validate_placement(result.lifetimes, result.placement).empty());
  EXPECT_EQ(draw_timeline(g, result, {.columns = 16}),
            "buffer 0 'test': 1 chunk, 128 bytes; lower bound 128 bytes; 8 bytes per column\n"
            "legend: a=x b=mm+scaled+sum c=copy d=out\n"
            "node        |chunk 0         | live\n"
            "   0 mm     |aaaabbbbbbbb....|   96\n"
            "   1 scaled |aaaabbbbbbbb....|   96\n"
            "   2 copy   |aaaa!!!!bbbb....|  128 peak\n"
            "   3 sum    |....!!!!bbbb....|   96\n"
            "   4 out    |dd..bbbbbbbb....|   80\n");
}

TEST_F(TimelineTiny, MismatchedPlacementIsReportedNotDrawn) {
  PlanningResult result = plan();
  result.placement.storage_address.pop_back();
  const auto names = buffer_names(result.plan);
  EXPECT_EQ(draw_timeline(g, result.lifetimes, result.placement, names),
            "timeline: the placement covers 3 storage objects and 1 buffers; the lifetimes have 4 and 1\n");
  const std::string html = render_timeline_html(g, result.lifetimes, result.placement, names);
  EXPECT_NE(html.find("<p class=\"error\">"), std::string::npos);
  EXPECT_EQ(html.find("<rect class=\"storage\""), std::string::npos);
}

// Buffer ids 0 and 2 share a type (and memory: d reuses a's bytes); buffer id 1 has a 64-byte
// max size, so b and c, live together, need two chunks.
TEST(Timeline, SharedBuffersAndChunks) {
  Graph g;
  const TensorId a = g.add_leaf(g.new_tensor("a", DataType::F32, {8}));  // 32 B
  g[a].flags |= kFlagInput;
  const TensorId b = g.add_node(g.new_op("b", Op::Cont, DataType::F32, {12}, {a}));  // 48 B
  const TensorId c = g.add_node(g.new_op("c", Op::Cont, DataType::F32, {12}, {b}));
  const TensorId d = g.add_node(g.new_op("d", Op::Cont, DataType::F32, {4}, {c}));  // 16 B
  g[d].flags |= kFlagOutput;
  NullBufferType cpu(16, kUnlimited, "CPU");
  NullBufferType small(16, 64, "small");
  const std::vector<const BufferType*> types{&cpu, &small, &cpu};
  const std::vector<BufferId> node_ids{1, 1, 2};
  const std::vector<BufferId> leaf_ids{0};
  auto result = plan_graph(g, types, {node_ids, leaf_ids}, {.strategy = Strategy::kGgml, .exact = {}});
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_EQ(draw_timeline(g, *result, {.columns = 8}),
            "buffers 0, 2 'CPU': 1 chunk, 32 bytes; lower bound 32 bytes; 4 bytes per column\n"
            "legend: a=a b=d\n"
            "node   |chunk 0 | live\n"
            "   0 b |aaaaaaaa|   32 peak\n"
            "   1 c |........|    0\n"
            "   2 d |bbbb....|   16\n"
            "\n"
            "buffer 1 'small': 2 chunks, 96 bytes (48 + 48); lower bound 96 bytes; 6 bytes per column\n"
            "legend: a=b b=c\n"
            "node   |chunk 0 |chunk 1 | live\n"
            "   0 b |aaaaaaaa|........|   48\n"
            "   1 c |aaaaaaaa|bbbbbbbb|   96 peak\n"
            "   2 d |........|bbbbbbbb|   48\n");
}

// A storage object whose tail dies first is two extents.
struct TimelineTail : ::testing::Test {
  Graph g;
  GraphProblem lifetimes;
  Placement placement;

  void SetUp() override {
    g.add_leaf(g.new_tensor("big", DataType::F32, {16}));
    g.add_leaf(g.new_tensor("small", DataType::F32, {4}));
    lifetimes.allocators = {{16, kUnlimited}};
    lifetimes.buffer_allocator = {0};
    StorageObject big{0, 64, {0, 3}, {{2, 16}}, 0};
    StorageObject small{0, 16, {1, 4}, {}, 1};
    lifetimes.storages = {big, small};
    lifetimes.events = {{LifetimeEvent::Kind::kAllocate, 0, 0, 64},
                        {LifetimeEvent::Kind::kAllocate, 1, 0, 16},
                        {LifetimeEvent::Kind::kFree, 0, 16, 48},
                        {LifetimeEvent::Kind::kFree, 0, 0, 16}};
    lifetimes.tensor_storage = {0, 1};
    lifetimes.tensor_buffer = {0, 0};
    placement.storage_address = {{0, 0}, {0, 64}};
    placement.chunk_sizes = {{80}};
  }
};

TEST_F(TimelineTail, Extents) {
  ASSERT_TRUE(validate_placement(lifetimes, placement).empty());
  const auto extents = timeline_extents(lifetimes, placement);
  ASSERT_EQ(extents.size(), 3u);
  EXPECT_EQ(extents[0].storage, 0);
  EXPECT_EQ(extents[0].steps, (Interval<Step>{0, 3}));
  EXPECT_EQ(extents[0].bytes, (Interval<Offset>{0, 16}));
  EXPECT_EQ(extents[1].steps, (Interval<Step>{0, 2}));
  EXPECT_EQ(extents[1].bytes, (Interval<Offset>{16, 64}));
  EXPECT_EQ(extents[2].storage, 1);
  EXPECT_EQ(extents[2].bytes, (Interval<Offset>{64, 80}));
}

TEST_F(TimelineTail, AsciiPerStep) {
  const std::vector<std::string> names{"dev"};
  EXPECT_EQ(draw_timeline(g, lifetimes, placement, names, {.columns = 10, .rows = TimelineRows::kSteps}),
            "buffer 0 'dev': 1 chunk, 80 bytes; lower bound 80 bytes; 8 bytes per column\n"
            "legend: a=big b=small\n"
            "step              |chunk 0   | live\n"
            "   0 alloc a      |aaaaaaaa..|   64\n"
            "   1 alloc b      |aaaaaaaabb|   80 peak\n"
            "   2 free  a tail |aa......bb|   32\n"
            "   3 free  a      |........bb|   16\n");
}

TEST_F(TimelineTail, HtmlHasOneRectPerExtent) {
  const std::vector<std::string> names{"dev"};
  const std::string html = render_timeline_html(g, lifetimes, placement, names, {.strategy = "hand-made"});
  const std::regex rect("<rect class=\"storage\"[^>]*data-storage=\"0\" data-extent=\"(\\d)\"");
  std::vector<std::string> seen;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), rect); it != std::sregex_iterator(); ++it) {
    seen.push_back((*it)[1]);
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"0", "1"}));
  EXPECT_NE(html.find("tail: freed early"), std::string::npos);
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST_F(TimelineTiny, HtmlStructure) {
  g[*g.find("copy")].name = "copy<&\"'>";
  const PlanningResult result = plan();
  const std::string html = render_timeline_html(g, result);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<rect class=\"storage\""), 4u);
  EXPECT_EQ(count(html, "<line class=\"peak-marker\""), 1u);
  EXPECT_EQ(count(html, "<line class=\"lower-bound\""), 1u);
  EXPECT_EQ(count(html, "<section class=\"buffer\""), 1u);
  EXPECT_EQ(count(html, "<figure class=\"panel\" id=\"panel-0-0\""), 1u);
  EXPECT_EQ(count(html, "<table class=\"peak-tensors\""), 1u);
  EXPECT_NE(html.find("<dd id=\"strategy\">ggml</dd>"), std::string::npos);
  EXPECT_NE(html.find("<dd id=\"peak\" data-bytes=\"128\">"), std::string::npos);
  EXPECT_NE(html.find("<dd id=\"lower-bound\" data-bytes=\"128\">"), std::string::npos);
  EXPECT_NE(html.find("<dd id=\"ratio\">1.000</dd>"), std::string::npos);
  EXPECT_TRUE(std::regex_search(html, std::regex("<line class=\"peak-marker\"[^>]*data-step=\"2\"")));
  // The storage of mm, scaled and sum: one rect, named by its first tensor, sized by the storage.
  EXPECT_NE(html.find("data-tensor=\"mm\" data-tensors=\"mm, scaled, sum\" data-op=\"MUL_MAT\" data-size=\"64\" "
                      "data-offset=\"32\" data-chunk=\"0\" data-from=\"1\" data-to=\"6\""),
            std::string::npos);
  // Names are escaped, and nothing is fetched from anywhere.
  EXPECT_NE(html.find("copy&lt;&amp;&quot;&#39;&gt;"), std::string::npos);
  EXPECT_EQ(html.find("copy<&"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find(" href="), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  // The peak table lists what is live at step 2: mm's storage first (largest), then x and copy.
  const auto table = html.find("<table class=\"peak-tensors\"");
  const auto first_row = html.find("<tr class=\"peak-row\"", table);
  const std::string row_tag = html.substr(first_row, html.find('>', first_row) - first_row);
  EXPECT_EQ(row_tag, "<tr class=\"peak-row\" data-allocator=\"0\" data-storage=\"1\"");
  EXPECT_EQ(count(html, "<tr class=\"peak-row\""), 3u);
}

TEST(Timeline, RandomPlansDrawWithoutSurprises) {
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    const auto c = testing::random_case(seed);
    auto types = c.make_buffer_types();
    auto result = plan_graph(c.graph, types.per_id, {c.node_buffer_ids, c.leaf_buffer_ids},
                             {.strategy = Strategy::kBest, .exact = {}});
    ASSERT_TRUE(result.is_ok()) << result.status().to_string();
    const std::string text = draw_timeline(c.graph, *result, {.columns = 32});
    EXPECT_EQ(text.find('!'), std::string::npos) << "seed " << seed << "\n" << text;
    const std::string html = render_timeline_html(c.graph, *result);
    EXPECT_EQ(count(html, "<rect class=\"storage\""), timeline_extents(result->lifetimes, result->placement).size())
        << "seed " << seed;
    std::size_t panels = 0;
    for (const auto& chunks : result->placement.chunk_sizes) panels += chunks.size();
    EXPECT_EQ(count(html, "<figure class=\"panel\""), panels) << "seed " << seed;
  }
}

TEST(Timeline, CharactersCycleAfterSixtyTwoStorageObjects) {
  Graph g;
  TensorId previous = g.add_leaf(g.new_tensor("in", DataType::F32, {4}));
  g[previous].flags |= kFlagInput;
  for (int i = 0; i < 70; ++i) {
    previous = g.add_node(g.new_op("n" + std::to_string(i), Op::Cont, DataType::F32, {4}, {previous}));
    g[previous].flags |= kFlagOutput;  // keeps every storage object alive
  }
  NullBufferType type(16);
  const std::vector<const BufferType*> types{&type};
  auto result = plan_graph(g, types, {}, {.strategy = Strategy::kGgml, .exact = {}});
  ASSERT_TRUE(result.is_ok());
  const std::string text = draw_timeline(g, *result);
  EXPECT_NE(text.find(" 9=n60 a=n61 b=n62"), std::string::npos) << text.substr(0, 800);
}

}  // namespace
}  // namespace galloc
