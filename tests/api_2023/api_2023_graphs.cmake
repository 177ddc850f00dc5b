# The 2023 allocator API of whisper.rn 0.4.0-rc.8 (ggml_allocr_*, ggml_tallocr_*, the first
# ggml_gallocr) on random graphs and on each of its behaviours (api_2023_graphs.cpp), once on
# libggml-stock.a and twice on libggml-galloc.a (GALLOC_STRATEGY=ggml and best), compared by
# tests/dropin/compare.cmake.
#
# Included from tests/api_2023/CMakeLists.txt, which defines GALLOC_GGML_2023_API_DIR (the output of
# integrations/ggml/build.sh), GALLOC_WARNINGS and the target galloc_dropin_lib_api_2023 (which
# builds ${GALLOC_GGML_2023_API_DIR}/libggml-galloc.a).
# test_support.hpp is the drop-in tests' (failing, hashing, the random generator)
galloc_add_stock_galloc_programs(galloc_api_2023_graphs ${CMAKE_CURRENT_LIST_DIR}/api_2023_graphs.cpp
  DIR ${GALLOC_GGML_2023_API_DIR} INCLUDES ${GALLOC_GGML_2023_API_DIR}/include ${CMAKE_CURRENT_LIST_DIR}/../dropin
  SYSTEM_INCLUDES ${GALLOC_GGML_2023_API_DIR}/include/internal DEPENDS galloc_dropin_lib_api_2023)

add_test(NAME api_2023_graphs
  COMMAND ${CMAKE_COMMAND} -DSTOCK=$<TARGET_FILE:galloc_api_2023_graphs_stock>
          -DGALLOC=$<TARGET_FILE:galloc_api_2023_graphs_galloc> -DOUT=${CMAKE_CURRENT_BINARY_DIR}/api_2023_graphs
          -DGGML_SIZES=ANY -P ${CMAKE_CURRENT_LIST_DIR}/../dropin/compare.cmake)
set_tests_properties(api_2023_graphs PROPERTIES LABELS dropin TIMEOUT 300)
