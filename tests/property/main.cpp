// The property tests' main: a fixed rapidcheck seed and case count unless RC_PARAMS says
// otherwise, so CTest runs are reproducible and a longer hunt is one variable away:
//
//   RC_PARAMS="max_success=5000 seed=$RANDOM" build/tests/property/galloc_property_tests
//   RC_PARAMS="reproduce=..." ...     (the string rapidcheck prints with a counterexample)
#include <gtest/gtest.h>

#include <cstdlib>

int main(int argc, char** argv) {
  // rapidcheck reads its configuration on first use, which is after this.
  setenv("RC_PARAMS", "max_success=3000 seed=20240601 verbose_progress=0", /*overwrite=*/0);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
