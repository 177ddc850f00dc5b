// Prints ggml_op_can_inplace for every op of the ggml it is built against: linked once with
// the package's stock ggml-alloc.c and once with galloc's drop-in, the two outputs must match
// (packages_test.sh runs it where ggml-impl.h declares the function).
#include <stdio.h>

#include "ggml-impl.h"
#include "ggml.h"

int main(void) {
  for (int op = 0; op < GGML_OP_COUNT; ++op) {
    printf("%s %d\n", ggml_op_name((enum ggml_op)op), ggml_op_can_inplace((enum ggml_op)op) ? 1 : 0);
  }
  return 0;
}
