// Counterexamples the property tests found, shrunk (and then trimmed by hand), as literal graphs.
// Each runs the full check of the properties: every strategy plans, validates, and executes
// like a run without reuse.
#include <gtest/gtest.h>

#include "property/checks.hpp"
#include "property/literal_case.hpp"

namespace galloc::property {
namespace {

std::string check(const Case& literal) {
  const BuiltCase c = literal.build();
  return check_every_strategy(c.graph, c.per_id, c.assignment(), /*seed=*/0, /*execute=*/true);
}

// Deferred written leafs (LifetimeOptions::defer_written_leafs, used by every strategy but
// ggml) allocated a leaf at its first write when that write was a view with op CPY, SET_ROWS,
// SET or ACC. Only CPY overwrites the whole view; SET and SET_ROWS keep the bytes they do not
// write and ACC reads them, so the leaf's contents (set by the application after alloc, as for
// every leaf ggml allocates up front "to avoid overwriting them") were lost when the memory it
// was given had been used before. Found by EveryStrategyValidatesAndExecutesLikeNoReuse
// (RC_PARAMS="max_success=2000 seed=1"), shrunk from 38 tensors:
//
//   x (input) -> n0 = mul_mat(x) -> n1 = mul_mat(n0) --+
//   l (plain leaf, set by the application) ------------+--> w = set_inplace(l, n1)  (output)
//
// Before the fix, greedy/exact/best allocated l only at w, in the bytes x had before n0 read
// it: the application setting l after alloc overwrote the input x (the failure read "n0 reads
// x, which differs; that byte is also the slot of l"), and w then read x's bytes where l's
// should be. ggml allocates l before the first node and was right. Fixed in src/lifetimes.cpp:
// only a leaf whose first use is a CPY over all of it is deferred (overwrites_whole).
Case deferred_leaf_case(Op write) {
  Case c;
  c.types = {{8, kUnlimited, 0}};
  c.id_types = {0};
  c.add(kLeaf, 0, "x", "f32", {16, 1, 1, 1}, {4, 64, 64, 64}, op("NONE"), {}, -1, 0, kFlagInput, false);  // 0
  c.add(kLeaf, 0, "l", "f32", {16, 1, 1, 1}, {4, 64, 64, 64}, op("NONE"), {}, -1, 0, 0, false);           // 1
  c.add(kNode, 0, "n0", "f32", {16, 1, 1, 1}, {4, 64, 64, 64}, op("MUL_MAT"), {0}, -1, 0, 0, false);      // 2
  c.add(kNode, 0, "n1", "f32", {4, 1, 1, 1}, {4, 16, 16, 16}, op("MUL_MAT"), {2}, -1, 0, 0, false);       // 3
  if (write == Op::SetRows) {
    // set_rows(l, n1, rows = n1): a view of l, src = {values, rows}
    c.add(kNode, 0, "w", "f32", {16, 1, 1, 1}, {4, 64, 64, 64}, write, {3, 3}, 1, 0, kFlagOutput, false);
  } else {
    // set_inplace(l, n1) / acc_inplace(l, n1): a view of l, src = {l, n1}
    c.add(kNode, 0, "w", "f32", {16, 1, 1, 1}, {4, 64, 64, 64}, write, {1, 3}, 1, 0, kFlagOutput, false);
  }
  return c;
}

TEST(PropertyRegressions, DeferredLeafKeepsItsContentsUnderSet) { EXPECT_EQ(check(deferred_leaf_case(Op::Set)), ""); }
TEST(PropertyRegressions, DeferredLeafKeepsItsContentsUnderAcc) { EXPECT_EQ(check(deferred_leaf_case(Op::Acc)), ""); }
TEST(PropertyRegressions, DeferredLeafKeepsItsContentsUnderSetRows) {
  EXPECT_EQ(check(deferred_leaf_case(Op::SetRows)), "");
}
// CPY overwrites all of l: deferring it is right, and saves memory.
TEST(PropertyRegressions, DeferredLeafUnderCpyIsOverwrittenWhole) {
  Case c = deferred_leaf_case(Op::Set);
  c.graph.tensors.back().op = Op::Cpy;
  c.graph.tensors.back().src = {3,         1,         kNoTensor, kNoTensor, kNoTensor,
                                kNoTensor, kNoTensor, kNoTensor, kNoTensor, kNoTensor};
  EXPECT_EQ(check(c), "");
}

}  // namespace
}  // namespace galloc::property
